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
 * Samples the memory a demo run takes (Linux {@code /proc}): the host's used memory (total minus
 * available, so shared memory and page-cache pressure count) above what it used before the workers
 * started, and each process's peak resident set ({@code VmHWM}, which includes the shared pages it
 * touched). A background thread samples every 50 ms until {@link #close()}; where {@code /proc} is
 * missing every figure is -1.
 */
final class MemoryWatch implements AutoCloseable {
  private static final Path MEMINFO = Path.of("/proc/meminfo");

  private final long idleUsed;
  private final Supplier<Map<String, Long>> processes;
  private final Map<String, Long> pids = new ConcurrentHashMap<>();
  private final Map<String, Long> peakRss = new ConcurrentHashMap<>();
  private final Thread sampler;
  private volatile long peakUsed;
  private volatile boolean running = true;

  /**
   * Starts sampling.
   *
   * @param processes the processes to watch by name (pid), asked at every sample
   */
  MemoryWatch(Supplier<Map<String, Long>> processes) {
    this.processes = processes;
    this.idleUsed = used();
    this.peakUsed = idleUsed;
    this.sampler = Thread.ofPlatform().daemon().name("mx-demo-memory").start(this::loop);
  }

  private void loop() {
    while (running) {
      sample();
      try {
        Thread.sleep(50);
      } catch (InterruptedException e) {
        return;
      }
    }
  }

  /** Takes one sample now (also called once more when closing). */
  void sample() {
    long u = used();
    if (u > peakUsed) {
      peakUsed = u;
    }
    for (Map.Entry<String, Long> e : processes.get().entrySet()) {
      pids.put(e.getKey(), e.getValue());
      long hwm = peakResident(e.getValue());
      if (hwm > 0) {
        peakRss.merge(e.getKey(), hwm, Math::max);
      }
    }
  }

  /** Peak used memory above the idle host, in bytes (-1 without {@code /proc}). */
  long peakAboveIdle() {
    return idleUsed < 0 ? -1 : Math.max(0, peakUsed - idleUsed);
  }

  /**
   * The report: {@code idle_used_bytes}, {@code peak_above_idle_bytes}, {@code weight_bytes},
   * {@code peak_per_weight} (the first over the second), {@code processes} [{name, pid,
   * peak_rss_bytes}].
   */
  Map<String, Object> report(long weightBytes) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("idle_used_bytes", idleUsed);
    m.put("peak_above_idle_bytes", peakAboveIdle());
    m.put("weight_bytes", weightBytes);
    m.put(
        "peak_per_weight",
        weightBytes > 0 && peakAboveIdle() >= 0 ? (double) peakAboveIdle() / weightBytes : null);
    List<Map<String, Object>> ps = new ArrayList<>();
    peakRss.forEach(
        (name, rss) -> {
          Map<String, Object> p = new LinkedHashMap<>();
          p.put("name", name);
          p.put("pid", pids.get(name));
          p.put("peak_rss_bytes", rss);
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

  /** MemTotal − MemAvailable in bytes, or -1. */
  static long used() {
    try {
      long total = -1;
      long available = -1;
      for (String line : Files.readAllLines(MEMINFO)) {
        if (line.startsWith("MemTotal:")) {
          total = kib(line);
        } else if (line.startsWith("MemAvailable:")) {
          available = kib(line);
        }
      }
      return total < 0 || available < 0 ? -1 : (total - available) * 1024;
    } catch (IOException | RuntimeException e) {
      return -1;
    }
  }

  /** A process's peak resident set in bytes ({@code VmHWM}), or -1 when it is gone. */
  static long peakResident(long pid) {
    try {
      for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid), "status"))) {
        if (line.startsWith("VmHWM:")) {
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
