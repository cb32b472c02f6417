/**
 * The {@code redis://} RefitService backend: SPEC.md section 11's key layout, each atomic step one
 * Lua script, so any number of servers over one Redis behave as one.
 */
@Internal // chosen by URI through RefitBackends, not called directly
package dev.mx.rl.redis;

import dev.mx.api.annotation.Internal;
