/**
 * A standalone publisher process for cross-process checks and benchmarks: it fills native regions
 * with a {@link dev.mx.transport.testsuite.tool.Pattern} anyone can recompute, serves them over any
 * transport on the class path, and prints its metadata; {@link
 * dev.mx.transport.testsuite.tool.PublisherProcess} starts and stops one from another JVM.
 */
package dev.mx.transport.testsuite.tool;
