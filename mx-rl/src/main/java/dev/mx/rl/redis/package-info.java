/**
 * The {@code redis://} RefitService backend: SPEC.md section 11's key layout, each atomic step one
 * Lua script, so any number of servers over one Redis behave as one.
 */
package dev.mx.rl.redis;
