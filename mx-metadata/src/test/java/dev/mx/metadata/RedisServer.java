package dev.mx.metadata;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
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
 * A real {@code redis-server} on a free loopback port, without persistence, for one test class. Tests skip
 * with the cause when the binary is absent ({@code .ci/run} installs it).
 */
final class RedisServer implements AutoCloseable {
  static final Path BINARY = Path.of("/usr/bin/redis-server");

  private final int port;
  private final Process process;

  private RedisServer(int port, Process process) {
    this.port = port;
    this.process = process;
  }

  /** Starts a server (extra arguments such as {@code --requirepass x}), or skips the test when there is none. */
  static RedisServer start(String... extraArgs) throws IOException, InterruptedException {
    assumeTrue(Files.isExecutable(BINARY), "skipping: " + BINARY + " is not installed (apt-get install"
        + " redis-server; .ci/run does this)");
    int port;
    try (ServerSocket probe = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      port = probe.getLocalPort();
    }
    List<String> cmd = new ArrayList<>(List.of(BINARY.toString(), "--port", Integer.toString(port), "--bind",
        "127.0.0.1", "--save", "", "--appendonly", "no"));
    cmd.addAll(List.of(extraArgs));
    Path log = Files.createTempFile("redis-" + port + "-", ".log");
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    RedisServer server = new RedisServer(port, p);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
    while (System.nanoTime() < deadline) {
      if (!p.isAlive()) {
        throw new IllegalStateException("redis-server exited with " + p.exitValue() + ": " + Files.readString(log));
      }
      if (server.answersPing()) {
        return server;
      }
      Thread.sleep(20);
    }
    server.close();
    throw new IllegalStateException("redis-server on port " + port + " did not answer within 15 s: "
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

  int port() {
    return port;
  }

  String uri() {
    return "redis://127.0.0.1:" + port;
  }

  /** Kills the server with SIGKILL, as a crash would. */
  void kill() throws InterruptedException {
    process.destroyForcibly();
    process.waitFor(10, TimeUnit.SECONDS);
  }

  @Override
  public void close() throws InterruptedException {
    kill();
  }
}
