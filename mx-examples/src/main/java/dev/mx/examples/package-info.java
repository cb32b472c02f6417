/**
 * Runnable embedding examples, run by the build's tests: {@link dev.mx.examples.InProcessExample}
 * (trainers and receivers in one JVM over {@code mem}) and {@link
 * dev.mx.examples.CrossProcessExample} (trainers in a child JVM, receivers here, over the best
 * transport). docs/EMBEDDING.md walks through them.
 */
package dev.mx.examples;
