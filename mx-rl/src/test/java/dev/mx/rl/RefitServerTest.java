package dev.mx.rl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.rl.client.RefitCallException;
import dev.mx.rl.client.RefitClient;
import dev.mx.rl.memory.MemoryRefitBackend;
import dev.mx.rl.proto.WorkerRole;
import io.grpc.Status;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** The embeddable server itself: ports, close, and what it does with bytes that are not gRPC. */
class RefitServerTest {

  @Test
  void portZeroBindsAnEphemeralPortAndCloseIsIdempotent() {
    RefitServer one = RefitServer.builder().ownedBackend(new MemoryRefitBackend(() -> 0)).build();
    RefitServer two = RefitServer.builder().ownedBackend(new MemoryRefitBackend(() -> 0)).build();
    try {
      assertTrue(one.port() > 0);
      assertNotEquals(one.port(), two.port());
      assertEquals("127.0.0.1:" + one.port(), one.address());
    } finally {
      one.close();
      one.close();
      two.close();
    }
  }

  @Test
  void aServerNeedsSomethingToServeAndAValidPort() {
    assertThrows(IllegalStateException.class, () -> RefitServer.builder().build());
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> RefitServer.builder().port(70000));
    assertTrue(e.getMessage().contains("70000"), e.getMessage());
  }

  @Test
  void aBusyPortIsNamed() {
    try (RefitServer first =
        RefitServer.builder().ownedBackend(new MemoryRefitBackend(() -> 0)).build()) {
      RuntimeException e =
          assertThrows(
              RuntimeException.class,
              () ->
                  RefitServer.builder()
                      .port(first.port())
                      .ownedBackend(new MemoryRefitBackend(() -> 0))
                      .build());
      assertTrue(e.getMessage().contains("127.0.0.1:" + first.port()), e.getMessage());
    }
  }

  @Test
  void garbageOnThePortIsDroppedAndTheServerKeepsServing() throws Exception {
    try (RefitServer server =
            RefitServer.builder()
                .ownedBackend(new MemoryRefitBackend(System::currentTimeMillis))
                .build();
        RefitClient client = new RefitClient("127.0.0.1", server.port())) {
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress("127.0.0.1", server.port()), 5000);
        s.setSoTimeout(30_000);
        OutputStream out = s.getOutputStream();
        out.write(
            "GET / HTTP/1.1\r\nHost: x\r\n\r\n\u0000\u0001garbage"
                .getBytes(StandardCharsets.ISO_8859_1));
        out.flush();
        InputStream in = s.getInputStream();
        // The server answers with an HTTP/2 GOAWAY (or just closes): either way it ends the stream.
        while (in.read() >= 0) {
          // drain until the server closes the connection
        }
      }
      assertEquals(
          "w", client.registerWorker("w", WorkerRole.WORKER_ROLE_TRAINER, "m", 10).getWorkerId());
      RefitCallException e =
          assertThrows(RefitCallException.class, () -> client.getVersion("nope"));
      assertEquals(Status.Code.NOT_FOUND, e.code());
    }
  }
}
