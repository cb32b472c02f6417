package dev.mx.testing;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A real {@code redis-server} on a free loopback port, without persistence. Tests skip, printing
 * the cause, when the binary is absent ({@code .ci/run} installs it). Most tests want {@link
 * RedisExtension}; this is for a test that starts its own (with a password, say) or restarts one
 * mid-run.
 */
public final class RedisServer implements AutoCloseable {
  /** Where Debian's {@code redis-server} package puts the binary. */
  public static final Path BINARY = Path.of("/usr/bin/redis-server");

  private static final long START_TIMEOUT_S = 15;

  private final int port;
  private final List<String> extraArgs;
  private final Path log;
  private Process process;

  private RedisServer(int port, List<String> extraArgs, Path log) {
    this.port = port;
    this.extraArgs = List.copyOf(extraArgs);
    this.log = log;
  }

  /** Why no server can start here, or null when one can. */
  public static String unavailabilityCause() {
    return Files.isExecutable(BINARY)
        ? null
        : BINARY + " is not installed (apt-get install redis-server; .ci/run does this)";
  }

  /**
   * Starts a server (extra arguments such as {@code --requirepass x}) and waits until it answers,
   * or skips the calling test (a JUnit assumption, with the cause also printed) when there is no
   * binary.
   */
  public static RedisServer start(String... extraArgs) throws IOException, InterruptedException {
    String cause = unavailabilityCause();
    if (cause != null) {
      System.err.println("SKIPPED: " + cause);
    }
    assumeTrue(cause == null, "skipping: " + cause);
    return launch(extraArgs);
  }

  /**
   * Starts a server and waits until it answers, outside JUnit (a benchmark that needs a real
   * Redis): no binary or a server that does not come up is an {@link IllegalStateException} saying
   * why.
   */
  public static RedisServer launch(String... extraArgs) throws IOException, InterruptedException {
    String cause = unavailabilityCause();
    if (cause != null) {
      throw new IllegalStateException("cannot start redis-server: " + cause);
    }
    int port;
    try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      port = probe.getLocalPort();
    }
    RedisServer server =
        new RedisServer(
            port, List.of(extraArgs), Files.createTempFile("redis-" + port + "-", ".log"));
    server.run();
    return server;
  }

  private void run() throws IOException, InterruptedException {
    List<String> cmd =
        new ArrayList<>(
            List.of(
                BINARY.toString(),
                "--port",
                Integer.toString(port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no"));
    cmd.addAll(extraArgs);
    Process p =
        new ProcessBuilder(cmd)
            .redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
            .start();
    process = p;
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(START_TIMEOUT_S);
    while (System.nanoTime() < deadline) {
      if (!p.isAlive()) {
        throw new IllegalStateException(
            "redis-server on port "
                + port
                + " exited at once with code "
                + p.exitValue()
                + ": "
                + Files.readString(log).strip().replaceAll("\\s*\\R\\s*", " | "));
      }
      if (answersPing()) {
        return;
      }
      Thread.sleep(20);
    }
    kill();
    throw new IllegalStateException(
        "redis-server on port "
            + port
            + " did not answer within "
            + START_TIMEOUT_S
            + " s: "
            + Files.readString(log));
  }

  private boolean answersPing() {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress("127.0.0.1", port), 200);
      OutputStream out = s.getOutputStream();
      out.write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
      out.flush();
      InputStream in = s.getInputStream();
      byte[] reply = new byte[64];
      int n = in.read(reply);
      // +PONG, or -NOAUTH when a password is required: either way the server is up.
      return n > 0 && (reply[0] == '+' || reply[0] == '-');
    } catch (IOException e) {
      return false;
    }
  }

  public int port() {
    return port;
  }

  /** {@code redis://127.0.0.1:PORT}. */
  public String uri() {
    return "redis://127.0.0.1:" + port;
  }

  /**
   * How the server process ended: "was killed by signal N", "exited with code N", or "is still
   * running".
   */
  public String exitDescription() {
    if (process == null || process.isAlive()) {
      return "is still running";
    }
    int code = process.exitValue();
    // A process killed by signal N reports 128 + N.
    return code > 128 ? "was killed by signal " + (code - 128) : "exited with code " + code;
  }

  /** Whether the server process runs. */
  public boolean isAlive() {
    return process != null && process.isAlive();
  }

  /** Kills the server with SIGKILL, as a crash would, and waits for it to be gone. */
  public void kill() throws InterruptedException {
    if (process != null) {
      process.destroyForcibly();
      process.waitFor(10, TimeUnit.SECONDS);
    }
  }

  /**
   * Kills the server and starts a fresh, empty one on the same port (as a Redis restart without
   * persistence).
   */
  public void restartEmpty() throws IOException, InterruptedException {
    kill();
    run();
  }

  /** Kills the server and deletes its log; idempotent. */
  @Override
  public void close() throws IOException, InterruptedException {
    kill();
    Files.deleteIfExists(log);
  }
}
