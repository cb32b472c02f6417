package dev.mx.cli.bench;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.ServiceLoader;

/**
 * The benchmarks {@code mx bench} can run: every {@link Benchmark} registered in {@code
 * META-INF/services} on the class path (mx-bench's jar registers the built-in ones), by name.
 */
public final class Benchmarks {

  private Benchmarks() {}

  /** Every benchmark on the class path by name, in registration (help) order. */
  public static Map<String, Benchmark> all() {
    Map<String, Benchmark> byName = new LinkedHashMap<>();
    for (Benchmark b : ServiceLoader.load(Benchmark.class, Benchmark.class.getClassLoader())) {
      Benchmark earlier = byName.putIfAbsent(b.name(), b);
      if (earlier != null) {
        throw new IllegalStateException(
            "two benchmarks are named '"
                + b.name()
                + "': "
                + earlier.getClass().getName()
                + " and "
                + b.getClass().getName());
      }
    }
    return Collections.unmodifiableMap(byName);
  }
}
