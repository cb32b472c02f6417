package dev.mx.metadata.redis;

import dev.mx.metadata.MetadataStoreException;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * Asks a Redis server for one answer over a plain socket before the client connects: it tells a
 * dead or silent server (no connection, or no answer in the bound) from one that is merely slow to
 * serve a client starting on a loaded host. Any answer counts, an authentication error included: it
 * proves a Redis server is there.
 */
final class RedisLiveness {
  private static final byte[] PING = "*1\r\n$4\r\nPING\r\n".getBytes(StandardCharsets.US_ASCII);

  private RedisLiveness() {}

  /**
   * Connects to {@code host:port}, sends PING and waits for the first byte of the answer.
   *
   * @throws MetadataStoreException naming {@code uri} and what failed, when the connection is
   *     refused or the server does not answer within {@code bound}
   */
  static void requireAnswer(String uri, String host, int port, Duration bound) {
    int millis = (int) Math.max(1, Math.min(Integer.MAX_VALUE, bound.toMillis()));
    try (Socket socket = new Socket()) {
      try {
        socket.connect(new InetSocketAddress(host, port), millis);
      } catch (SocketTimeoutException e) {
        throw failure(uri, "no connection within " + millis + " ms", e);
      }
      socket.setSoTimeout(millis);
      socket.getOutputStream().write(PING);
      InputStream in = socket.getInputStream();
      if (in.read() < 0) {
        throw failure(uri, "the server closed the connection without answering", null);
      }
    } catch (SocketTimeoutException e) {
      throw failure(
          uri,
          "no answer within " + millis + " ms (a hung server, or a port that is not Redis)",
          e);
    } catch (IOException e) {
      throw failure(uri, e.getMessage() != null ? e.getMessage() : e.toString(), e);
    }
  }

  private static MetadataStoreException failure(String uri, String what, Throwable cause) {
    return new MetadataStoreException(uri, "cannot connect to Redis: " + what, cause);
  }
}
