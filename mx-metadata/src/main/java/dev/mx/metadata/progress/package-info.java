/**
 * Liveness-based waits (docs/VERSIONS.md, "Waiting on liveness"): a party being waited for writes a
 * heartbeat record with a progress counter and a phase ({@link ProgressBeat}); a waiter keeps
 * waiting while every party it waits on advances, and fails after the stall limit without progress,
 * naming the party and what it was last doing ({@link StallWatch}).
 */
package dev.mx.metadata.progress;
