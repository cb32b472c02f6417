package dev.mx.bench.suite;

import dev.mx.api.refit.Capture;
import dev.mx.api.transport.Transport;
import dev.mx.api.util.Settings;
import dev.mx.cli.bench.BenchOptions;
import dev.mx.refit.DiscoveredSources;
import dev.mx.refit.Receiver;
import dev.mx.refit.ReceiverConfig;
import dev.mx.refit.SourceDiscovery;
import dev.mx.refit.VerifyMode;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * Warm refits of one in-process receiver, as the refit benchmarks time them: two cold steps (plan,
 * buffers, first touch), then {@code repetitions} timed steps whose engine adopts the buffers (no
 * install copy).
 */
final class WarmRefits {
  private WarmRefits() {}

  /**
   * Median seconds of the timed steps.
   *
   * @param endToEnd {@code updateWeights} as the caller sees it
   * @param wire the fused wire stage
   * @param last the last step's metrics
   */
  record Timing(double endToEnd, double wire, Map<String, Object> last) {}

  /**
   * Runs the steps; {@code check} sees each timed step's metrics and throws when a step did not do
   * what the benchmark claims to measure.
   */
  static Timing run(
      BenchOptions options,
      String label,
      Transport receiverTransport,
      DiscoveredSources sources,
      Capture capture,
      VerifyMode mode,
      Consumer<Map<String, Object>> check)
      throws Exception {
    ReceiverConfig config =
        ReceiverConfig.defaults().withVerify(mode).withThreads(options.effectiveThreads());
    List<Double> e2e = new ArrayList<>();
    List<Double> wire = new ArrayList<>();
    Map<String, Object> last = Map.of();
    try (Receiver receiver =
        Receiver.builder()
            .config(config)
            .settings(Settings.of(Map.of(), Map.of("MX_REFIT_STAGE_RECORD", "0")))
            .transport(receiverTransport)
            .discovery(SourceDiscovery.fixed(sources))
            .geometry(m -> capture)
            .installer((step, buffers) -> {}) // hand-over: the engine adopts the buffers, no copy
            .build()) {
      options.progress().printf("%s: verify=%s, cold steps ...%n", label, mode.label());
      receiver.updateWeights(0);
      receiver.updateWeights(1);
      for (int i = 0; i < options.repetitions(); i++) {
        long start = System.nanoTime();
        last = receiver.updateWeights(2 + i);
        e2e.add((System.nanoTime() - start) / 1e9);
        wire.add((Double) last.get("wire_fused_s"));
        check.accept(last);
      }
    }
    return new Timing(median(e2e), median(wire), last);
  }

  /** Fills {@code seg} with floats in [-0.5, 0.5) that differ from element to element. */
  static void fill(MemorySegment seg, int seed) {
    long n = seg.byteSize() / 4;
    for (long i = 0; i < n; i++) {
      seg.setAtIndex(
          ValueLayout.JAVA_FLOAT, i, (float) ((i * 2654435761L + seed) % 1000) / 1000f - 0.5f);
    }
  }

  static double median(List<Double> v) {
    List<Double> s = new ArrayList<>(v);
    s.sort(null);
    int k = s.size();
    return k % 2 == 1 ? s.get(k / 2) : (s.get(k / 2 - 1) + s.get(k / 2)) / 2;
  }
}
