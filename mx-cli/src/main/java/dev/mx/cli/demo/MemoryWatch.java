package dev.mx.cli.demo;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

/**
 * Samples the memory a demo run takes (Linux {@code /proc}), counting only the run's own processes:
 * the sum of their proportional set sizes ({@code Pss} in {@code smaps_rollup}, where a page mapped
 * by k processes counts 1/k in each, so the trainers' shared memory the receivers map is counted
 * once), and each process's peak resident set ({@code VmHWM}) and peak PSS. Another job on the host
 * allocating or freeing memory changes none of these. A background thread samples every 100 ms
 * until {@link #close()}; where {@code /proc} is missing every figure is -1.
 */
final class MemoryWatch implements AutoCloseable {
  private static final Path MEMINFO = Path.of("/proc/meminfo");

  private final Supplier<Map<String, Long>> processes;
  private final Map<String, Long> pids = new ConcurrentHashMap<>();
  private final Map<String, Long> peakRss = new ConcurrentHashMap<>();
  private final Map<String, Long> peakPss = new ConcurrentHashMap<>();
  private final Thread sampler;
  private volatile long peakTotalPss = -1;
  private volatile boolean running = true;

  /**
   * Starts sampling.
   *
   * @param processes the processes to watch by name (pid), asked at every sample
   */
  MemoryWatch(Supplier<Map<String, Long>> processes) {
    this.processes = processes;
    this.sampler = Thread.ofPlatform().daemon().name("mx-demo-memory").start(this::loop);
  }

  private void loop() {
    while (running) {
      sample();
      try {
        // smaps_rollup walks a process's page tables: often enough for the peak, cheap enough
        // on two cores.
        Thread.sleep(100);
      } catch (InterruptedException e) {
        return;
      }
    }
  }

  /** Takes one sample now (also called once more when closing). */
  synchronized void sample() {
    long total = 0;
    boolean any = false;
    for (Map.Entry<String, Long> e : processes.get().entrySet()) {
      pids.put(e.getKey(), e.getValue());
      long hwm = peakResident(e.getValue());
      if (hwm > 0) {
        peakRss.merge(e.getKey(), hwm, Math::max);
      }
      long pss = proportional(e.getValue());
      if (pss > 0) {
        peakPss.merge(e.getKey(), pss, Math::max);
        total += pss;
        any = true;
      }
    }
    if (any && total > peakTotalPss) {
      peakTotalPss = total;
    }
  }

  /** The peak of the run's processes' summed PSS, in bytes (-1 without {@code /proc}). */
  long peakTotal() {
    return peakTotalPss;
  }

  /**
   * The report: {@code peak_pss_bytes} (the peak of the summed PSS of the run's processes), {@code
   * weight_bytes}, {@code peak_per_weight} (the first over the second), {@code processes} [{name,
   * pid, peak_rss_bytes, peak_pss_bytes}].
   */
  Map<String, Object> report(long weightBytes) {
    Map<String, Object> m = new LinkedHashMap<>();
    long peak = peakTotal();
    m.put("peak_pss_bytes", peak);
    m.put("weight_bytes", weightBytes);
    m.put("peak_per_weight", weightBytes > 0 && peak >= 0 ? (double) peak / weightBytes : null);
    List<Map<String, Object>> ps = new ArrayList<>();
    peakRss.forEach(
        (name, rss) -> {
          Map<String, Object> p = new LinkedHashMap<>();
          p.put("name", name);
          p.put("pid", pids.get(name));
          p.put("peak_rss_bytes", rss);
          p.put("peak_pss_bytes", peakPss.getOrDefault(name, -1L));
          ps.add(p);
        });
    ps.sort((a, b) -> String.valueOf(a.get("name")).compareTo(String.valueOf(b.get("name"))));
    m.put("processes", ps);
    return m;
  }

  /** This host's physical memory ({@code MemTotal}) in bytes, or -1 when it cannot be read. */
  static long total() {
    try {
      for (String line : Files.readAllLines(MEMINFO)) {
        if (line.startsWith("MemTotal:")) {
          return kib(line) * 1024;
        }
      }
    } catch (IOException | RuntimeException e) {
      // No /proc: nothing to check against.
    }
    return -1;
  }

  /** A process's proportional set size in bytes ({@code Pss}), or -1 when it is gone. */
  static long proportional(long pid) {
    return procBytes(pid, "smaps_rollup", "Pss:");
  }

  /** A process's peak resident set in bytes ({@code VmHWM}), or -1 when it is gone. */
  static long peakResident(long pid) {
    return procBytes(pid, "status", "VmHWM:");
  }

  /** The kB figure of the line starting with {@code key} in {@code /proc/PID/file}, in bytes. */
  private static long procBytes(long pid, String file, String key) {
    try {
      for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid), file))) {
        if (line.startsWith(key)) {
          return kib(line) * 1024;
        }
      }
    } catch (IOException | RuntimeException e) {
      // Gone, or no /proc.
    }
    return -1;
  }

  private static long kib(String line) {
    String[] parts = line.trim().split("\\s+");
    return Long.parseLong(parts[1]);
  }

  @Override
  public void close() {
    if (!running) {
      return;
    }
    running = false;
    sampler.interrupt();
    try {
      sampler.join(1000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    sample();
  }
}
