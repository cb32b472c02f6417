package dev.mx.bench.suite;

import static dev.mx.bench.suite.ByteSizes.KIB;
import static dev.mx.bench.suite.ByteSizes.MIB;
import static dev.mx.bench.suite.ByteSizes.label;

import dev.mx.api.error.TransportException;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.api.transport.TransportConfig;
import dev.mx.cli.bench.BenchOptions;
import dev.mx.cli.bench.BenchResult;
import dev.mx.cli.bench.Benchmark;
import dev.mx.transport.testsuite.tool.PublisherProcess;
import dev.mx.transport.ucx.Ucx;
import dev.mx.transport.ucx.UcxTransport;
import dev.mx.transport.ucx.UcxTransportProvider;
import java.io.File;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * The ucx transport across processes against {@code ucx_perftest -t ucp_get} with the same message
 * sizes and the same {@code UCX_TLS}, both measured in this run: a child JVM publishes two 64 MiB
 * regions, one of its own memory (registered, as a trainer's weights are) and one from {@code
 * Transport.allocate} (UCX's own allocation, as ucx_perftest's buffers are); this JVM reads each in
 * batches of 64 KiB, 1 MiB and 64 MiB descriptors (bandwidth) and of 4 KiB descriptors (descriptors
 * per second). Like ucx_perftest, every GET of a run reads the same source bytes into the same
 * destination, and ucx_perftest may keep {@value #PERFTEST_WINDOW} GETs in flight (a batch keeps
 * all of its GETs in flight). Runs take turns so all see the same machine.
 */
public final class UcxBench implements Benchmark {
  /** Bytes one run moves (both sides). */
  private static final long RUN_BYTES = 512 * MIB;

  private static final int PERFTEST_WINDOW = 128;
  private static final int WARMUP_RUNS = 3;
  private static final long WARMUP_MILLIS = 1000;
  private static final String SESSION = "bench-publisher";

  @Override
  public String name() {
    return "ucx";
  }

  @Override
  public String description() {
    return "ucx transport across processes: GET bandwidth (64 KiB, 1 MiB, 64 MiB) and 4 KiB descriptors/s vs ucx_perftest";
  }

  @Override
  public List<BenchResult> run(BenchOptions options) throws Exception {
    if (!Ucx.isAvailable()) {
      throw new TransportException(
          null, "ucx bench: UCX is unavailable: " + Ucx.unavailabilityCause());
    }
    Optional<Path> perftest = findOnPath("ucx_perftest");
    if (perftest.isEmpty()) {
      options
          .progress()
          .println(
              "ucx bench: ucx_perftest IS MISSING (not on PATH; apt-get install ucx-utils):"
                  + " measuring the ucx transport alone, with no baseline and no ratio");
    }
    try (Arena arena = Arena.ofShared();
        UcxTransport receiver =
            (UcxTransport)
                new UcxTransportProvider()
                    .create(
                        TransportConfig.of("bench-receiver").withTimeout(Duration.ofMinutes(5)))) {
      String tls = receiver.transports();
      Map<String, String> props = tls == null ? Map.of() : Map.of("ucx.tls", tls);
      options
          .progress()
          .println(
              "ucx bench: libucp "
                  + Ucx.version()
                  + ", UCX_TLS="
                  + (tls == null ? System.getenv("UCX_TLS") + " (from the environment)" : tls)
                  + "; ucx_perftest: "
                  + perftest.map(Path::toString).orElse("missing"));
      MemorySegment dst = arena.allocate(64 * MIB, 4096);
      receiver.register(dst);
      try (PublisherProcess publisher =
          PublisherProcess.launch("ucx", SESSION)
              .seed(1)
              .regions(List.of(64 * MIB))
              .allocated(List.of(64 * MIB))
              .properties(props)
              .start(Duration.ofSeconds(120))) {
        receiver.connect(SESSION, publisher.metadata());
        long own = publisher.regions().get(0).base();
        long allocated = publisher.regions().get(1).base();
        Perftest baseline = perftest.map(p -> new Perftest(p, tls)).orElse(null);
        List<BenchResult> results = new ArrayList<>();
        for (long size : new long[] {64 * KIB, MIB, 64 * MIB, 4 * KIB}) {
          int count = (int) (RUN_BYTES / size);
          boolean rate = size == 4 * KIB;
          List<ReadDescriptor> fromOwn =
              Collections.nCopies(count, new ReadDescriptor(SESSION, own, dst.address(), size));
          List<ReadDescriptor> fromAllocated =
              Collections.nCopies(
                  count, new ReadDescriptor(SESSION, allocated, dst.address(), size));
          options
              .progress()
              .println("ucx bench: " + label(size) + " GETs, " + count + " per run ...");
          // As a rate: GB/s for the bandwidth sizes, descriptors (messages) per second for 4 KiB.
          double unit = rate ? count : RUN_BYTES / 1e9;
          double[] m =
              measure(
                  options,
                  baseline == null
                      ? null
                      : () -> {
                        PerftestResult r = baseline.run(size, count);
                        return rate ? r.messagesPerSecond() : r.gbps();
                      },
                  () -> unit / timed(() -> receiver.read(fromOwn)),
                  () -> unit / timed(() -> receiver.read(fromAllocated)));
          String metric = "ucx_get_" + label(size) + (rate ? "_descriptors_per_s" : "_GBps");
          String base =
              baselineName(
                  baseline, "ucx_perftest_get_" + label(size) + (rate ? "_msgs_per_s" : "_GBps"));
          String u = rate ? "desc/s" : "GB/s";
          results.add(new BenchResult(metric, m[1], u, base, m[0]));
          results.add(
              new BenchResult(
                  metric.replace("ucx_get_", "ucx_get_allocated_"), m[2], u, base, m[0]));
        }
        return results;
      }
    }
  }

  private static String baselineName(Perftest baseline, String name) {
    return baseline == null ? "ucx_perftest_missing" : name;
  }

  /** A measured quantity (a rate: higher is better). */
  @FunctionalInterface
  private interface Sample {
    double take() throws Exception;
  }

  /**
   * Warms each sample up (at least {@value #WARMUP_RUNS} runs and {@value #WARMUP_MILLIS} ms, so
   * the JIT has compiled the issue loop: a batch runs it once per descriptor), then takes rounds in
   * which each sample runs in turn; returns the median of each, the baseline first (NaN without
   * one).
   */
  private static double[] measure(BenchOptions options, Sample baseline, Sample... metrics)
      throws Exception {
    List<Sample> all = new ArrayList<>();
    all.add(baseline != null ? baseline : () -> Double.NaN);
    all.addAll(List.of(metrics));
    for (Sample s : all.subList(1, all.size())) {
      long until = System.nanoTime() + WARMUP_MILLIS * 1_000_000L;
      for (int i = 0; i < WARMUP_RUNS || System.nanoTime() < until; i++) {
        s.take();
      }
    }
    all.getFirst().take();
    double[][] taken = new double[all.size()][options.repetitions()];
    for (int rep = 0; rep < options.repetitions(); rep++) {
      for (int i = 0; i < all.size(); i++) {
        taken[i][rep] = all.get(i).take();
      }
    }
    double[] medians = new double[all.size()];
    for (int i = 0; i < medians.length; i++) {
      medians[i] = median(taken[i]);
    }
    return medians;
  }

  private static double median(double[] values) {
    double[] v = values.clone();
    Arrays.sort(v);
    return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
  }

  private static double timed(Runnable action) {
    long start = System.nanoTime();
    action.run();
    return (System.nanoTime() - start) / 1e9;
  }

  static Optional<Path> findOnPath(String program) {
    String path = System.getenv("PATH");
    for (String dir : (path == null ? "/usr/bin:/usr/local/bin" : path).split(File.pathSeparator)) {
      Path p = Path.of(dir.isEmpty() ? "." : dir, program);
      if (Files.isExecutable(p)) {
        return Optional.of(p);
      }
    }
    return Optional.empty();
  }

  /** ucx_perftest's result: overall bandwidth (its "MB/s" are MiB/s) and overall message rate. */
  record PerftestResult(double mebibytesPerSecond, double messagesPerSecond) {
    double gbps() {
      return mebibytesPerSecond * MIB / 1e9;
    }

    /**
     * Parses the last line of {@code ucx_perftest -v} (CSV: iterations, 3 latencies, 2 bandwidths,
     * 2 rates).
     */
    static PerftestResult parseCsv(String output) {
      String last = null;
      for (String line : output.lines().toList()) {
        if (!line.isBlank() && Character.isDigit(line.strip().charAt(0))) {
          last = line.strip();
        }
      }
      if (last == null) {
        throw new IllegalStateException("no result line in ucx_perftest output:\n" + output);
      }
      String[] f = last.split(",");
      if (f.length < 8) {
        throw new IllegalStateException("unexpected ucx_perftest result line '" + last + "'");
      }
      return new PerftestResult(Double.parseDouble(f[5]), Double.parseDouble(f[7]));
    }
  }

  /** Runs a ucx_perftest server and client pair on this host for one measurement. */
  private record Perftest(Path binary, String tls) {

    PerftestResult run(long size, int iterations) throws Exception {
      int port;
      try (ServerSocket s = new ServerSocket(0)) {
        port = s.getLocalPort();
      }
      Process server = start(List.of(binary.toString(), "-p", Integer.toString(port)));
      Thread.ofVirtual()
          .start(() -> readAll(server)); // its stdout is block-buffered: nothing to wait for
      try {
        List<String> client =
            List.of(
                binary.toString(),
                "localhost",
                "-p",
                Integer.toString(port),
                "-t",
                "ucp_get",
                "-s",
                Long.toString(size),
                "-n",
                Integer.toString(iterations),
                "-w",
                Integer.toString(Math.max(2, iterations / 10)),
                "-O",
                Integer.toString(PERFTEST_WINDOW),
                "-f",
                "-v");
        // The client fails at once while the server is not listening yet: retry for up to 30 s.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (true) {
          Process c = start(client);
          CompletableFuture<String> out = CompletableFuture.supplyAsync(() -> readAll(c));
          if (!c.waitFor(10, TimeUnit.MINUTES)) {
            c.destroyForcibly();
            throw new IllegalStateException("ucx_perftest client did not finish within 10 minutes");
          }
          String text = out.get(1, TimeUnit.MINUTES);
          if (c.exitValue() == 0) {
            return PerftestResult.parseCsv(text);
          }
          if (!server.isAlive() || System.nanoTime() > deadline) {
            throw new IllegalStateException(
                "ucx_perftest client exited with " + c.exitValue() + ":\n" + text);
          }
          Thread.sleep(100);
        }
      } finally {
        if (!server.waitFor(30, TimeUnit.SECONDS)) {
          server.destroyForcibly();
        }
      }
    }

    private Process start(List<String> command) throws IOException {
      ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
      if (tls != null) {
        pb.environment().put("UCX_TLS", tls);
      }
      return pb.start();
    }

    private static String readAll(Process p) {
      try {
        return new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      } catch (IOException e) {
        return "";
      }
    }
  }
}
