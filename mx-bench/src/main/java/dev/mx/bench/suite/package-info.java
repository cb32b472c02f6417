/**
 * In-process benchmarks behind {@code mx bench NAME}, registered as {@code
 * dev.mx.cli.bench.Benchmark} services. Each measures a metric and its baseline in the same run and
 * reports the ratio; nothing here is asserted by tests.
 */
package dev.mx.bench.suite;
