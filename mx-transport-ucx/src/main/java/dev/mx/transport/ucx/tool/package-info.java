/**
 * A standalone publisher process for cross-process checks and benchmarks: it fills native regions with a
 * {@link dev.mx.transport.ucx.tool.Pattern} anyone can recompute, serves them over ucx, and prints its
 * metadata; {@link dev.mx.transport.ucx.tool.PublisherProcess} starts and stops one from another JVM.
 */
package dev.mx.transport.ucx.tool;
