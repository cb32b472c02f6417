package dev.mx.transport.ucx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.transport.ReadDescriptor;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.transport.testsuite.tool.PublisherProcess;
import dev.mx.transport.testsuite.tool.PublisherProcess.Region;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Issue 14, across real processes: a publisher JVM stopped (SIGSTOP, as a long GC pause would)
 * while a receiver JVM reads large regions from it with many GETs outstanding, past the receiver's
 * timeout and past UCX's own keepalive and TCP keepalive (set short here so this takes seconds),
 * must be alive after SIGCONT and serve a new receiver, whatever the receiver did meanwhile: stayed
 * with its endpoint force-closed, closed its worker and context, or was killed. And the reverse: a
 * receiver stopped mid-read past the publisher's keepalive.
 */
class UcxStoppedPeerTest {
  private static final long MIB = 1 << 20;
  private static final long REGION = 128 * MIB;
  private static final Duration START = Duration.ofSeconds(60);

  /** Several keepalive intervals and TCP keepalive probes, and past the receiver's timeout. */
  private static final long STOPPED_MS = 2_500;

  /** What the receiver does while the publisher is stopped. */
  enum ReceiverEnd {
    STAYS,
    CLOSES,
    KILLED
  }

  /** The endpoint settings of both sides: the transports, and UCX's keepalive short. */
  static Map<String, String> ucx(String tls) {
    return Map.of(UcxOptions.TLS, tls, "ucx.config.KEEPALIVE_INTERVAL", "300ms");
  }

  /**
   * The transports' own peer-failure timers, short. UCX takes these only from the environment (set
   * through the context's configuration it reports them invalid), so the child processes get them
   * there.
   */
  static final Map<String, String> ENV =
      Map.of(
          "UCX_TCP_KEEPIDLE",
          "1s",
          "UCX_TCP_KEEPINTVL",
          "500ms",
          "UCX_TCP_KEEPCNT",
          "2",
          "UCX_UD_VERBS_TIMEOUT",
          "2s",
          "UCX_UD_MLX5_TIMEOUT",
          "2s",
          "UCX_RC_VERBS_TIMEOUT",
          "10ms",
          "UCX_RC_MLX5_TIMEOUT",
          "10ms");

  /**
   * The cases that aborted the publisher before reads were served with active messages (TCP: the
   * receiver closed or killed while the publisher was stopped), and shared memory with and without
   * CMA. Every transport and receiver end was run once (60 s more); each of these takes about 9 s.
   */
  static Stream<Arguments> publisherStopped() {
    return Stream.of(
        Arguments.of("tcp", ReceiverEnd.CLOSES),
        Arguments.of("tcp", ReceiverEnd.KILLED),
        Arguments.of("tcp", ReceiverEnd.STAYS),
        Arguments.of("posix,self", ReceiverEnd.KILLED),
        Arguments.of("sm", ReceiverEnd.CLOSES));
  }

  @ParameterizedTest(name = "UCX_TLS={0}, receiver {1}")
  @MethodSource
  void publisherStopped(String tls, ReceiverEnd end) throws Exception {
    UcxTestSupport.requireUcx();
    Map<String, String> props = ucx(tls);
    try (PublisherProcess publisher =
        PublisherProcess.launch("ucx", "paused")
            .seed(8)
            .regions(List.of(REGION))
            .properties(props)
            .environment(ENV)
            .start(START)) {
      try (Reader reader = Reader.start(publisher, 32, Duration.ofSeconds(3), props)) {
        Thread.sleep(300); // the big read is under way
        signal("STOP", publisher.pid());
        try {
          String result = reader.result(Duration.ofSeconds(60));
          System.out.println(tls + "/" + end + ": the receiver's read ended with " + result);
          switch (end) {
            case STAYS -> {}
            case CLOSES -> reader.command("close", "CLOSED");
            case KILLED -> reader.kill();
          }
          Thread.sleep(STOPPED_MS);
        } finally {
          signal("CONT", publisher.pid());
        }
        Thread.sleep(2_000); // the publisher now meets what is left of the receiver's endpoint
        assertTrue(
            publisher.isAlive(),
            tls + "/" + end + ": the publisher died after it resumed: " + publisher.logTail());
      }
      readFreshly(publisher, props);
      assertTrue(
          publisher.isAlive(), "the publisher died after serving again: " + publisher.logTail());
    }
  }

  static Stream<Arguments> receiverStopped() {
    return Stream.of("tcp", "sm").map(Arguments::of);
  }

  @ParameterizedTest(name = "UCX_TLS={0}")
  @MethodSource
  void receiverStopped(String tls) throws Exception {
    UcxTestSupport.requireUcx();
    Map<String, String> props = ucx(tls);
    try (PublisherProcess publisher =
        PublisherProcess.launch("ucx", "serving")
            .seed(9)
            .regions(List.of(REGION))
            .properties(props)
            .environment(ENV)
            .start(START)) {
      try (Reader reader = Reader.start(publisher, 32, Duration.ofSeconds(3), props)) {
        Thread.sleep(300);
        signal("STOP", reader.pid());
        try {
          Thread.sleep(STOPPED_MS);
          assertTrue(
              publisher.isAlive(),
              "the publisher died while its receiver was stopped: " + publisher.logTail());
        } finally {
          signal("CONT", reader.pid());
        }
        String result = reader.result(Duration.ofSeconds(60));
        System.out.println(tls + ": the stopped receiver's read ended with " + result);
        reader.command("close", "CLOSED");
      }
      Thread.sleep(1_000);
      assertTrue(
          publisher.isAlive(),
          "the publisher died after its receiver resumed: " + publisher.logTail());
      readFreshly(publisher, props);
    }
  }

  /** A new receiver in this JVM connects and reads the whole region byte-exact. */
  private static void readFreshly(PublisherProcess publisher, Map<String, String> props) {
    try (Arena arena = Arena.ofShared();
        Transport fresh =
            new UcxTransportProvider()
                .create(new TransportConfig("fresh", Duration.ofSeconds(30), props))) {
      Region r = publisher.regions().getFirst();
      MemorySegment dst = arena.allocate(r.length(), 4096);
      fresh.register(dst);
      fresh.connect(publisher.session(), publisher.metadata());
      fresh.read(
          List.of(new ReadDescriptor(publisher.session(), r.base(), dst.address(), r.length())),
          Duration.ofSeconds(30));
      assertEquals(
          -1,
          publisher.pattern().mismatch(dst, 0, 0, 0, r.length()),
          "bytes from " + publisher.session());
    }
  }

  static void signal(String name, long pid) throws Exception {
    Process kill = new ProcessBuilder("kill", "-" + name, Long.toString(pid)).inheritIO().start();
    assertEquals(0, kill.waitFor(), "kill -" + name + " " + pid);
  }

  /** A {@link ReaderProcess}: started, connected, one read done, the large read under way. */
  static final class Reader implements AutoCloseable {
    private final Process process;
    private final BufferedReader out;
    private final Path log;

    private Reader(Process process, Path log) {
      this.process = process;
      this.out =
          new BufferedReader(
              new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
      this.log = log;
    }

    static Reader start(PublisherProcess p, int copies, Duration timeout, Map<String, String> props)
        throws Exception {
      Region r = p.regions().getFirst();
      List<String> cmd =
          new ArrayList<>(
              List.of(
                  Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                  "--enable-native-access=ALL-UNNAMED",
                  "-Xmx64m",
                  "-XX:+UseSerialGC",
                  "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                  "-cp",
                  System.getProperty("java.class.path"),
                  ReaderProcess.class.getName(),
                  p.session(),
                  Base64.getEncoder().encodeToString(p.metadata()),
                  Long.toString(r.base()),
                  Long.toString(r.length()),
                  Integer.toString(copies),
                  Long.toString(timeout.toMillis())));
      props.forEach((k, v) -> cmd.add(k + "=" + v));
      Path log = Files.createTempFile("mx-reader-", ".log");
      ProcessBuilder builder = new ProcessBuilder(cmd).redirectError(log.toFile());
      builder.environment().putAll(ENV);
      Reader reader = new Reader(builder.start(), log);
      reader.expect("READY", Duration.ofSeconds(60));
      return reader;
    }

    long pid() {
      return process.pid();
    }

    private String nextLine(Duration within) throws Exception {
      CompletableFuture<String> line =
          CompletableFuture.supplyAsync(
              () -> {
                try {
                  // UCX may log on stdout too: only this protocol's lines count.
                  for (String l; (l = out.readLine()) != null; ) {
                    if (l.startsWith(ReaderProcess.PREFIX)) {
                      return l.substring(ReaderProcess.PREFIX.length());
                    }
                  }
                  return null;
                } catch (IOException e) {
                  return null;
                }
              });
      String got = line.get(within.toMillis(), TimeUnit.MILLISECONDS);
      if (got == null) {
        throw new AssertionError(
            "the reader exited (" + process.waitFor() + "): " + Files.readString(log));
      }
      return got;
    }

    void expect(String want, Duration within) throws Exception {
      String got = nextLine(within);
      assertEquals(want, got, "reader: " + Files.readString(log));
    }

    /** The outcome of the large read: {@code ok}, {@code timeout} or {@code failed ...}. */
    String result(Duration within) throws Exception {
      String got = nextLine(within);
      assertTrue(got.startsWith("RESULT "), got);
      return got.substring("RESULT ".length());
    }

    void command(String command, String reply) throws Exception {
      OutputStream in = process.getOutputStream();
      in.write((command + "\n").getBytes(StandardCharsets.UTF_8));
      in.flush();
      expect(reply, Duration.ofSeconds(30));
    }

    void kill() throws InterruptedException {
      process.destroyForcibly();
      process.waitFor(10, TimeUnit.SECONDS);
    }

    @Override
    public void close() throws Exception {
      try {
        process.getOutputStream().close();
      } catch (IOException gone) {
        // already exited
      }
      if (!process.waitFor(20, TimeUnit.SECONDS)) {
        process.destroyForcibly();
      }
      Files.deleteIfExists(log);
    }
  }
}
