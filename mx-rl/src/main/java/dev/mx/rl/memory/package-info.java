/** The {@code memory:} RefitService backend: every record in this process, one lock per step. */
package dev.mx.rl.memory;
