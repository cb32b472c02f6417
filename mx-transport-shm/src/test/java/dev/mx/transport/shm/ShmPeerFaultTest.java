package dev.mx.transport.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.error.TransportException;
import dev.mx.api.error.TransportTimeoutException;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.testing.Eventually;
import dev.mx.transport.testsuite.tool.PublisherProcess;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Peer death over shm, with real processes: a publisher killed with SIGKILL in the middle of a
 * large read, twenty times in a row against one receiver, and a receiver killed in the middle of
 * its reads.
 */
class ShmPeerFaultTest {
  private static final long MIB = 1 << 20;
  private static final Duration TIMEOUT = Duration.ofSeconds(10);

  /** A liveness bound for a dead peer's files to be gone, not a timing expectation. */
  private static final Duration RECLAIM_BOUND = Duration.ofSeconds(60);

  @BeforeEach
  void shmIsAvailable() {
    ShmTestSupport.assumeShm();
  }

  /** The transport's files in the shared-memory directory whose names start with {@code prefix}. */
  static List<String> filesStartingWith(String prefix) throws IOException {
    try (Stream<Path> s = Files.list(Shm.directory())) {
      return s.map(p -> p.getFileName().toString()).filter(n -> n.startsWith(prefix)).toList();
    }
  }

  @Test
  void aPublisherKilledMidReadFailsTheReadNamingItTwentyTimesInARowAndLeavesNoFiles()
      throws Exception {
    Random random = new Random(5);
    try (Arena arena = Arena.ofShared();
        Transport receiver =
            new ShmTransportProvider()
                .create(TransportConfig.of("inference-0").withTimeout(TIMEOUT))) {
      MemorySegment dst = arena.allocate(16 * MIB, 4096);
      receiver.register(dst);
      String ns = Shm.self().pidNamespaceId();
      for (int round = 0; round < 20; round++) {
        String peer = "trainer-" + round;
        // One region of the child's own memory (cross-memory attach), one shared file (allocate).
        PublisherProcess pub =
            PublisherProcess.launch("shm", peer)
                .seed(round)
                .regions(List.of(8 * MIB))
                .allocated(List.of(8 * MIB))
                .start(Duration.ofSeconds(60));
        String files = ShmFiles.PREFIX + ns + "-" + pub.pid() + "-";
        try {
          assertEquals(
              2,
              filesStartingWith(files).size(),
              "the publisher's directory and its shared region");
          receiver.connect(peer, pub.metadata());
          List<ReadDescriptor> all = new ArrayList<>();
          for (PublisherProcess.Region r : pub.regions()) {
            for (long off = 0; off < r.length(); off += MIB) {
              all.add(
                  new ReadDescriptor(
                      peer, r.base() + off, dst.address() + (r.index() * r.length()) + off, MIB));
            }
          }
          receiver.read(all); // it works before the kill, byte-exact
          for (PublisherProcess.Region r :
              round == 0 ? pub.regions() : List.<PublisherProcess.Region>of()) {
            assertEquals(
                -1,
                pub.pattern().mismatch(dst, r.index() * r.length(), r.index(), 0, r.length()),
                peer);
          }
          CompletableFuture<TransportException> reading =
              CompletableFuture.supplyAsync(
                  () -> {
                    while (true) {
                      try {
                        receiver.read(all);
                      } catch (TransportException e) {
                        return e;
                      }
                    }
                  });
          Thread.sleep(random.nextInt(40));
          pub.kill();
          TransportException e = reading.get(TIMEOUT.toSeconds() + 60, TimeUnit.SECONDS);
          assertEquals(peer, e.peer(), e.getMessage());
          assertTrue(e.getMessage().contains("'" + peer + "'"), e.getMessage());
          // The death was detected, not waited out (no wall-clock bound: a loaded host is slow).
          assertFalse(
              e instanceof TransportTimeoutException,
              "the read should fail naming the dead peer, not time out: " + e);
          // The receiver reclaimed what the dead publisher left in the shared-memory directory.
          assertEquals(
              List.of(),
              Eventually.until(() -> filesStartingWith(files), List::isEmpty, RECLAIM_BOUND),
              "files of the killed publisher (pid " + pub.pid() + ")");
          assertTrue(receiver.isConnected(peer));
        } finally {
          pub.close();
        }
      }
    }
  }

  @Test
  void aPublisherEndedWithSigtermWithoutClosingLeavesNoFiles() throws Exception {
    try (PublisherProcess pub =
        PublisherProcess.launch("shm", "trainer-t")
            .seed(1)
            .allocated(List.of(MIB))
            .start(Duration.ofSeconds(60))) {
      String files = ShmFiles.PREFIX + Shm.self().pidNamespaceId() + "-" + pub.pid() + "-";
      assertEquals(2, filesStartingWith(files).size());
      assertEquals(
          0, new ProcessBuilder("kill", "-TERM", Long.toString(pub.pid())).start().waitFor());
      assertEquals(
          List.of(),
          Eventually.until(() -> filesStartingWith(files), List::isEmpty, RECLAIM_BOUND),
          "the exiting JVM deleted its files");
    }
  }

  @Test
  void aReceiverKilledMidReadLeavesThePublisherServingTheNextOne() throws Exception {
    try (Arena arena = Arena.ofShared();
        Transport publisher = new ShmTransportProvider().create(TransportConfig.of("trainer-0"))) {
      MemorySegment shared = publisher.allocate(16 * MIB).segment();
      MemorySegment own = arena.allocate(16 * MIB, 4096);
      publisher.register(own);
      for (long i = 0; i < 16 * MIB; i += 8) {
        shared.set(java.lang.foreign.ValueLayout.JAVA_LONG, i, i * 31);
        own.set(java.lang.foreign.ValueLayout.JAVA_LONG, i, ~i);
      }
      Path meta = Files.createTempFile("mx-shm-test-meta", ".b64");
      Files.writeString(meta, Base64.getEncoder().encodeToString(publisher.localMetadata()));
      List<String> cmd =
          List.of(
              Path.of(System.getProperty("java.home"), "bin", "java").toString(),
              "--enable-native-access=ALL-UNNAMED",
              "-Xmx64m",
              "-cp",
              System.getProperty("java.class.path"),
              ShmReadLoop.class.getName(),
              meta.toString(),
              "trainer-0");
      Process child = new ProcessBuilder(cmd).redirectErrorStream(true).start();
      try {
        BufferedReader out =
            new BufferedReader(
                new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
        String line;
        int reads = 0;
        while ((line = out.readLine()) != null && reads < 3) {
          if (line.startsWith("read ")) {
            reads++;
          }
        }
        assertEquals(
            3, reads, "the child receiver read before it was killed (last line: " + line + ")");
        child.destroyForcibly();
        assertTrue(child.waitFor(30, TimeUnit.SECONDS));
      } finally {
        child.destroyForcibly();
        Files.deleteIfExists(meta);
      }
      // A new receiver reads both regions byte-exact from the same publisher.
      try (Transport next = new ShmTransportProvider().create(TransportConfig.of("inference-1"))) {
        MemorySegment dst = arena.allocate(32 * MIB, 4096);
        next.register(dst);
        next.connect("trainer-0", publisher.localMetadata());
        next.read(
            List.of(
                new ReadDescriptor("trainer-0", shared.address(), dst.address(), 16 * MIB),
                new ReadDescriptor(
                    "trainer-0", own.address(), dst.address() + 16 * MIB, 16 * MIB)));
        assertEquals(-1, MemorySegment.mismatch(shared, 0, 16 * MIB, dst, 0, 16 * MIB));
        assertEquals(-1, MemorySegment.mismatch(own, 0, 16 * MIB, dst, 16 * MIB, 32 * MIB));
        assertTrue(publisher.isHealthy());
      }
      assertNotNull(publisher.localMetadata());
    }
  }

  /**
   * A killed publisher's allocated memory (files this receiver mapped) is read as it left it, but
   * only while {@link Transport#readAfterExit} allows it; a publisher that also served its own
   * memory (cross-memory attach), which died with it, is refused: the call says false and every
   * read of it keeps failing naming it.
   */
  @Test
  void aKilledPublishersAllocatedMemoryIsReadAsItLeftItOnlyWhileAllowed() throws Exception {
    try (Arena arena = Arena.ofShared();
        Transport receiver =
            new ShmTransportProvider()
                .create(TransportConfig.of("inference-0").withTimeout(TIMEOUT))) {
      MemorySegment dst = arena.allocate(4 * MIB, 4096);
      receiver.register(dst);
      try (PublisherProcess shared =
              PublisherProcess.launch("shm", "trainer-s")
                  .seed(7)
                  .allocated(List.of(2 * MIB))
                  .start(TIMEOUT);
          PublisherProcess mixed =
              PublisherProcess.launch("shm", "trainer-m")
                  .seed(8)
                  .regions(List.of(MIB))
                  .allocated(List.of(MIB))
                  .start(TIMEOUT)) {
        receiver.connect("trainer-s", shared.metadata());
        receiver.connect("trainer-m", mixed.metadata());
        String files = ShmFiles.PREFIX + Shm.self().pidNamespaceId() + "-" + shared.pid() + "-";
        PublisherProcess.Region s = shared.regions().getFirst();
        List<ReadDescriptor> all =
            List.of(new ReadDescriptor("trainer-s", s.base(), dst.address(), s.length()));
        receiver.read(all);
        shared.kill();
        mixed.kill();
        assertFalse(shared.isAlive());
        TransportException dead = assertThrows(TransportException.class, () -> receiver.read(all));
        assertTrue(
            dead.getMessage().contains("'trainer-s'") && dead.getMessage().contains("exited"));
        // Its files are reclaimed; the mappings here keep their pages.
        assertEquals(
            List.of(),
            Eventually.until(() -> filesStartingWith(files), List::isEmpty, RECLAIM_BOUND),
            "files of the killed publisher (pid " + shared.pid() + ")");

        dst.fill((byte) 0);
        assertTrue(receiver.readAfterExit("trainer-s", true), "all of its memory is mapped");
        receiver.read(all);
        assertEquals(-1, shared.pattern().mismatch(dst, 0, s.index(), 0, s.length()));
        assertTrue(receiver.readAfterExit("trainer-s", false));
        assertThrows(TransportException.class, () -> receiver.read(all), "allowed no more");

        assertFalse(receiver.readAfterExit("trainer-m", true), "part of its memory died with it");
        for (PublisherProcess.Region r : mixed.regions()) {
          // Refused, nothing changed: every read of it still fails for its death.
          List<ReadDescriptor> one =
              List.of(new ReadDescriptor("trainer-m", r.base(), dst.address(), r.length()));
          TransportException e = assertThrows(TransportException.class, () -> receiver.read(one));
          assertEquals("trainer-m", e.peer(), e.getMessage());
        }
        assertFalse(receiver.readAfterExit("trainer-x", true), "not a connected peer");
      }
    }
  }
}
