package dev.mx.transport.nixl.tool;

import dev.mx.api.annotation.Internal;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A {@link NixlPublisher} child JVM with this JVM's class path, NIXL settings and environment: its
 * regions and metadata once it is ready. Closing it closes its standard input and waits for it to
 * exit.
 */
@Internal
public final class NixlPublisherProcess implements AutoCloseable {
  /** One region the child registered. */
  public record Region(long base, long length) {}

  private static final java.util.concurrent.Executor READERS = r -> Thread.ofVirtual().start(r);

  private final Process process;
  private final byte[] metadata;
  private final List<Region> regions;
  private final CompletableFuture<String> stderr;

  private NixlPublisherProcess(
      Process process, byte[] metadata, List<Region> regions, CompletableFuture<String> stderr) {
    this.process = process;
    this.metadata = metadata;
    this.regions = List.copyOf(regions);
    this.stderr = stderr;
  }

  /**
   * Starts a publisher named {@code session} with one region per size and waits until it is ready.
   */
  public static NixlPublisherProcess start(String session, List<Long> sizes, Duration timeout)
      throws IOException {
    return start(session, sizes, timeout, Map.of());
  }

  /**
   * As {@link #start(String, List, Duration)}, with extra system properties for the child (they
   * win).
   */
  public static NixlPublisherProcess start(
      String session, List<Long> sizes, Duration timeout, Map<String, String> properties)
      throws IOException {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("--enable-native-access=ALL-UNNAMED");
    Map<String, String> props = new TreeMap<>();
    for (String key : System.getProperties().stringPropertyNames()) {
      if (key.startsWith("mx.nixl.") || key.equals("mx.transport.noNative")) {
        props.put(key, System.getProperty(key));
      }
    }
    props.putAll(properties);
    props.forEach((k, v) -> cmd.add("-D" + k + "=" + v));
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(NixlPublisher.class.getName());
    cmd.add(session);
    for (long s : sizes) {
      cmd.add(Long.toString(s));
    }
    Process p = new ProcessBuilder(cmd).start();
    // Own threads, not the common pool: on two cores it has one worker, and the stderr reader
    // blocks it.
    CompletableFuture<String> err =
        CompletableFuture.supplyAsync(
            () -> {
              try {
                return new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
              } catch (IOException e) {
                return "";
              }
            },
            READERS);
    CompletableFuture<NixlPublisherProcess> ready =
        CompletableFuture.supplyAsync(
            () -> {
              try {
                BufferedReader in =
                    new BufferedReader(
                        new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
                List<Region> regions = new ArrayList<>();
                byte[] md = null;
                for (String line; (line = in.readLine()) != null; ) {
                  if (!line.startsWith(NixlPublisher.PREFIX)) {
                    continue;
                  }
                  String[] f = line.substring(NixlPublisher.PREFIX.length()).split(" ");
                  switch (f[0]) {
                    case "region" ->
                        regions.add(new Region(Long.parseLong(f[2]), Long.parseLong(f[3])));
                    case "metadata" -> md = Base64.getDecoder().decode(f[1]);
                    case "ready" -> {
                      return new NixlPublisherProcess(p, md, regions, err);
                    }
                    default -> {}
                  }
                }
                return null;
              } catch (IOException e) {
                return null;
              }
            },
            READERS);
    NixlPublisherProcess result;
    try {
      result = ready.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (Exception e) {
      result = null;
    }
    if (result == null) {
      p.destroyForcibly();
      String why;
      try {
        why = err.get(10, TimeUnit.SECONDS);
      } catch (Exception e) {
        why = "(no stderr)";
      }
      throw new IOException(
          "nixl publisher '" + session + "' did not get ready within " + timeout + ":\n" + why);
    }
    return result;
  }

  public byte[] metadata() {
    return metadata.clone();
  }

  public List<Region> regions() {
    return regions;
  }

  /** Kills the publisher at once (to test what its peers see when it dies). */
  public void kill() throws InterruptedException {
    process.destroyForcibly().waitFor();
  }

  @Override
  public void close() throws IOException {
    if (!process.isAlive() && process.exitValue() != 0) {
      return; // killed
    }
    process.getOutputStream().close();
    try {
      if (!process.waitFor(30, TimeUnit.SECONDS)) {
        process.destroyForcibly();
        throw new IOException("nixl publisher did not exit within 30 s of its stdin closing");
      }
      if (process.exitValue() != 0) {
        throw new IOException(
            "nixl publisher exited with "
                + process.exitValue()
                + ":\n"
                + stderr.getNow("(stderr not read yet)"));
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      process.destroyForcibly();
    }
  }
}
