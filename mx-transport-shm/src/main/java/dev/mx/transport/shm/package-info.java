/**
 * The {@code shm} transport: same-host, multi-process one-sided reads through shared memory on
 * Java's foreign-memory API, designed so that the death of any participant never wedges or crashes
 * another.
 */
package dev.mx.transport.shm;
