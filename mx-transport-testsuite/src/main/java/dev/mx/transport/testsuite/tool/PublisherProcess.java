package dev.mx.transport.testsuite.tool;

import dev.mx.api.error.TransportException;
import dev.mx.api.transport.MemoryKind;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A {@link PatternPublisher} running in a child JVM (this JVM's {@code java} and class path), with
 * what it printed: its regions and its metadata blob. {@link #close()} closes its stdin and waits
 * for a clean exit; {@link #kill()} kills it outright, as a crashed publisher.
 */
public final class PublisherProcess implements AutoCloseable {
  private final Process process;
  private final String session;
  private final Pattern pattern;
  private final List<Region> regions;
  private final byte[] metadata;
  private final Path log;

  /**
   * A region the child published: its index in the pattern, base address, length, whether it came
   * from {@code Transport.allocate} rather than the child's own memory, and the memory it lies in.
   */
  public record Region(int index, long base, long length, boolean allocated, MemoryKind memory) {}

  private PublisherProcess(
      Process process,
      String session,
      Pattern pattern,
      List<Region> regions,
      byte[] metadata,
      Path log) {
    this.process = process;
    this.session = session;
    this.pattern = pattern;
    this.regions = List.copyOf(regions);
    this.metadata = metadata;
    this.log = log;
  }

  /** A publisher over {@code transport} named {@code session}, to describe, then start. */
  public static Launch launch(String transport, String session) {
    return new Launch(transport, session);
  }

  /**
   * What a publisher child publishes and how it runs. The child inherits this JVM's {@code mx.*}
   * system properties (a backend's settings, such as {@code mx.nixl.library}); {@link
   * #jvmArguments} come after them and win.
   */
  public static final class Launch {
    private final String transport;
    private final String session;
    private long seed = 1;
    private List<Long> sizes = List.of();
    private List<Long> allocatedSizes = List.of();
    private MemoryKind memory = MemoryKind.HOST;
    private Map<String, String> properties = Map.of();
    private List<String> jvmArguments = List.of();
    private Map<String, String> environment = Map.of();

    private Launch(String transport, String session) {
      this.transport = transport;
      this.session = session;
    }

    /** The pattern's seed. */
    public Launch seed(long seed) {
      this.seed = seed;
      return this;
    }

    /** The byte size of each region of the child's own memory. */
    public Launch regions(List<Long> sizes) {
      this.sizes = List.copyOf(sizes);
      return this;
    }

    /**
     * Further regions the child takes from {@code Transport.allocate} (indexed after the others).
     */
    public Launch allocated(List<Long> allocatedSizes) {
      this.allocatedSizes = List.copyOf(allocatedSizes);
      return this;
    }

    /** The memory of the child's own regions: host (the default) or a device such as cuda:0. */
    public Launch memory(MemoryKind memory) {
      this.memory = memory;
      return this;
    }

    /** Transport properties for its endpoint (e.g. {@code ucx.tls}). */
    public Launch properties(Map<String, String> properties) {
      this.properties = Map.copyOf(properties);
      return this;
    }

    /** Extra JVM arguments for the child. */
    public Launch jvmArguments(List<String> jvmArguments) {
      this.jvmArguments = List.copyOf(jvmArguments);
      return this;
    }

    /** Extra environment variables for the child. */
    public Launch environment(Map<String, String> environment) {
      this.environment = Map.copyOf(environment);
      return this;
    }

    /** Starts the child and waits until it is ready, at most {@code startTimeout}. */
    public PublisherProcess start(Duration startTimeout) throws IOException {
      return PublisherProcess.start(this, startTimeout);
    }
  }

  private static PublisherProcess start(Launch launch, Duration startTimeout) throws IOException {
    String session = launch.session;
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("--enable-native-access=ALL-UNNAMED");
    cmd.add("-Xmx128m");
    cmd.add("-XX:+UseSerialGC");
    for (String key : new TreeSet<>(System.getProperties().stringPropertyNames())) {
      if (key.startsWith("mx.")) {
        cmd.add("-D" + key + "=" + System.getProperty(key));
      }
    }
    cmd.addAll(launch.jvmArguments);
    cmd.add("-cp");
    // Under surefire java.class.path may be its booter jar alone; the test class path is the real
    // one.
    cmd.add(System.getProperty("surefire.test.class.path", System.getProperty("java.class.path")));
    cmd.add(PatternPublisher.class.getName());
    cmd.add("--transport");
    cmd.add(launch.transport);
    cmd.add("--session");
    cmd.add(session);
    cmd.add("--seed");
    cmd.add(Long.toString(launch.seed));
    cmd.add("--memory");
    cmd.add(launch.memory.toString());
    if (!launch.sizes.isEmpty()) {
      cmd.add("--regions");
      cmd.add(String.join(",", launch.sizes.stream().map(String::valueOf).toList()));
    }
    if (!launch.allocatedSizes.isEmpty()) {
      cmd.add("--allocated");
      cmd.add(String.join(",", launch.allocatedSizes.stream().map(String::valueOf).toList()));
    }
    launch.properties.forEach(
        (k, v) -> {
          cmd.add("--property");
          cmd.add(k + "=" + v);
        });
    Path log = Files.createTempFile("mx-publisher-" + session + "-", ".log");
    ProcessBuilder builder = new ProcessBuilder(cmd).redirectError(log.toFile());
    builder.environment().putAll(launch.environment);
    Process p = builder.start();
    CompletableFuture<List<String>> lines = CompletableFuture.supplyAsync(() -> readUntilReady(p));
    try {
      List<String> got = lines.get(startTimeout.toMillis(), TimeUnit.MILLISECONDS);
      List<Region> regions = new ArrayList<>();
      byte[] metadata = null;
      for (String line : got) {
        String[] f = line.substring(PatternPublisher.PREFIX.length()).split(" ");
        switch (f[0]) {
          case "region" ->
              regions.add(
                  new Region(
                      Integer.parseInt(f[1]),
                      Long.parseLong(f[2]),
                      Long.parseLong(f[3]),
                      f[4].equals("allocated"),
                      MemoryKind.parse(f[5])));
          case "metadata" -> metadata = Base64.getDecoder().decode(f[1]);
          default -> {}
        }
      }
      if (metadata == null
          || regions.size() != launch.sizes.size() + launch.allocatedSizes.size()) {
        throw new IOException("publisher '" + session + "' printed no metadata or too few regions");
      }
      return new PublisherProcess(p, session, new Pattern(launch.seed), regions, metadata, log);
    } catch (InterruptedException
        | ExecutionException
        | TimeoutException
        | IOException
        | RuntimeException e) {
      p.destroyForcibly();
      throw new IOException(
          "publisher '"
              + session
              + "' did not start within "
              + startTimeout
              + ": "
              + e
              + "; its log "
              + log
              + " ends with: "
              + tail(log),
          e);
    }
  }

  private static List<String> readUntilReady(Process p) {
    BufferedReader r =
        new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
    List<String> lines = new ArrayList<>();
    try {
      for (String line; (line = r.readLine()) != null; ) {
        if (line.startsWith(PatternPublisher.PREFIX)) {
          if (line.equals(PatternPublisher.PREFIX + "ready")) {
            return lines;
          }
          lines.add(line);
        }
      }
    } catch (IOException e) {
      throw new TransportException(
          null, "reading the publisher's output failed: " + e.getMessage(), e);
    }
    throw new IllegalStateException(
        "the publisher exited (status " + p.exitValue() + ") before it was ready");
  }

  private static String tail(Path log) {
    try {
      String s = Files.readString(log);
      return s.length() > 2000 ? s.substring(s.length() - 2000) : s;
    } catch (IOException e) {
      return "(unreadable: " + e.getMessage() + ")";
    }
  }

  public String session() {
    return session;
  }

  public Pattern pattern() {
    return pattern;
  }

  public List<Region> regions() {
    return regions;
  }

  /** The metadata blob to {@code connect} to it with. */
  public byte[] metadata() {
    return metadata.clone();
  }

  public long pid() {
    return process.pid();
  }

  public boolean isAlive() {
    return process.isAlive();
  }

  /** Kills the publisher (SIGKILL) and waits for it to be gone. */
  public void kill() throws InterruptedException {
    process.destroyForcibly();
    process.waitFor(30, TimeUnit.SECONDS);
  }

  /** Its stderr so far (for failure messages). */
  public String logTail() {
    return tail(log);
  }

  /** Asks it to exit by closing its stdin; kills it if it has not exited within 20 s. */
  @Override
  public void close() throws IOException {
    try (OutputStream in = process.getOutputStream()) {
      in.flush();
    } catch (IOException ignored) {
      // Already gone.
    }
    try {
      if (!process.waitFor(20, TimeUnit.SECONDS)) {
        process.destroyForcibly();
        process.waitFor(10, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      process.destroyForcibly();
      Thread.currentThread().interrupt();
    } finally {
      Files.deleteIfExists(log);
    }
  }
}
