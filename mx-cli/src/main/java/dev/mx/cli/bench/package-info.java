/**
 * The contract between {@code mx bench NAME} and the benchmarks it runs: a {@link
 * dev.mx.cli.bench.Benchmark} found through {@code ServiceLoader} (the built-in ones live in
 * mx-bench), the options it is given and the results it reports against its baseline.
 */
package dev.mx.cli.bench;
