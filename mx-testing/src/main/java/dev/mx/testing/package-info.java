/**
 * Test fixtures shared across modules: {@link dev.mx.testing.RedisExtension} (a real {@code
 * redis-server} per test class or test) and {@link dev.mx.testing.Signals} (what the test JVM
 * inherited about signals).
 */
package dev.mx.testing;
