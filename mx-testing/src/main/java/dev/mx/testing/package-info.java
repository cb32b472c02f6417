/**
 * Test fixtures shared across modules: {@link dev.mx.testing.RedisExtension} (a real {@code
 * redis-server} per test class or test), {@link dev.mx.testing.Signals} (what the test JVM
 * inherited about signals), {@link dev.mx.testing.SmallTmpfs} (a file system that runs out of
 * space) and {@link dev.mx.testing.Eventually} (waiting for the event a test checks, within a
 * liveness bound, instead of sleeping).
 */
package dev.mx.testing;
