/**
 * In-process benchmarks behind {@code mx bench NAME}. Each measures a metric and its baseline in
 * the same run and reports the ratio; nothing here is asserted by tests.
 */
package dev.mx.cli.bench;
