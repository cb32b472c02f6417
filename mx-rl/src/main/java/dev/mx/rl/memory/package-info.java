/** The {@code memory:} RefitService backend: every record in this process, one lock per step. */
@Internal // chosen by URI through RefitBackends, not called directly
package dev.mx.rl.memory;

import dev.mx.api.annotation.Internal;
