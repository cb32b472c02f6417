package dev.mx.transport.testsuite;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.error.TransportException;
import dev.mx.api.transport.LandingFold;
import dev.mx.api.transport.LandingFolds;
import dev.mx.api.transport.MemoryRegistration;
import dev.mx.api.transport.PendingRead;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportStats;
import dev.mx.transport.testsuite.tool.PublisherProcess;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What every transport must do. Each test has a publisher endpoint that registers source memory and
 * a receiver endpoint that registers destination memory, connects the publisher under {@link #PEER}
 * and reads. A backend supplies its endpoints through {@link #newTransport(String)}.
 *
 * <h2>Capability flags</h2>
 *
 * What a backend may or may not do is a {@link TransportBehavior}, declared by overriding {@link
 * #hasBehavior}; a subclass that declares nothing gets each flag's default, so existing subclasses
 * keep compiling and passing. Every flag has one test that runs either way: "yes" asserts the
 * capability works, "no" asserts the specific failure documented on the flag (never a skip).
 *
 * <ul>
 *   <li>{@link TransportBehavior#SUPPORTS_PEERS_IN_OTHER_PROCESSES} (default yes): a publisher in
 *       another JVM ({@link PublisherProcess}, started with the test class path and {@link
 *       #peerTransportName()}) is read byte-exact; "no" must fail with a {@code TransportException}
 *       naming the peer.
 *   <li>{@link TransportBehavior#SUPPORTS_ALLOCATION} (default yes): {@code Transport.allocate}
 *       gives registered memory a peer reads; "no" must throw naming the transport.
 *   <li>{@link TransportBehavior#REVOKES_DEREGISTERED_MEMORY} (default yes): a read of memory the
 *       publisher deregistered fails; "no" must say so in {@code revokesDeregisteredMemory()} and
 *       either fail or deliver the bytes the memory still holds.
 *   <li>{@link TransportBehavior#SUPPORTS_DEVICE_MEMORY} (default no): device buffers from {@link
 *       #deviceMemory} are read byte-exact; "no" must reject a device buffer's registration.
 * </ul>
 *
 * Example: {@code @Override protected boolean hasBehavior(TransportBehavior b) { return b !=
 * TransportBehavior.SUPPORTS_PEERS_IN_OTHER_PROCESSES && b.defaultValue(); }}
 */
public abstract class AbstractTransportConformanceTest {
  /** The session name the receiver knows the publisher by. */
  protected static final String PEER = "publisher";

  private static final long MIB = 1 << 20;

  protected Arena arena;
  protected Transport publisher;
  protected Transport receiver;
  private final List<AutoCloseable> toClose = new ArrayList<>();

  /** A new endpoint of the backend under test with the given session name. */
  protected abstract Transport newTransport(String session);

  /**
   * A new endpoint that publishes (the suite's {@link #PEER} and second peer); default {@link
   * #newTransport}. A mixed pair overrides it: e.g. a publisher serving shm and ucx, read by a
   * receiver that has ucx only.
   */
  protected Transport newPublisher(String session) {
    return newTransport(session);
  }

  /**
   * Whether the backend has {@code behavior}; override to declare a "no" (or a "yes" whose default
   * is no).
   */
  protected boolean hasBehavior(TransportBehavior behavior) {
    return behavior.defaultValue();
  }

  /**
   * The provider name the {@link PublisherProcess} of {@code peersInOtherProcesses} selects;
   * default: the receiver endpoint's {@code name()}.
   */
  protected String peerTransportName() {
    return receiver.name();
  }

  /**
   * Extra JVM arguments for that {@link PublisherProcess} (e.g. {@code -Dmx.nixl.library=...} when
   * this suite runs against a library the provider would not find by itself); default none.
   */
  protected List<String> peerJvmArguments() {
    return List.of();
  }

  /**
   * Device memory of {@code bytes} holding {@code content}, for {@link
   * TransportBehavior#SUPPORTS_DEVICE_MEMORY}; {@link #copyFromDevice} reads it back. Default: none
   * (null), as on a machine without a GPU.
   */
  protected MemorySegment deviceMemory(long bytes, MemorySegment content) {
    return null;
  }

  /** Copies {@code device} (from {@link #deviceMemory}) into host memory {@code host}. */
  protected void copyFromDevice(MemorySegment device, MemorySegment host) {
    throw new UnsupportedOperationException("override copyFromDevice together with deviceMemory");
  }

  @BeforeEach
  @SuppressWarnings("MustBeClosedChecker") // closed in @AfterEach
  void openEndpoints() {
    arena = Arena.ofShared();
    publisher = newPublisher(PEER);
    receiver = newTransport("receiver");
  }

  @AfterEach
  void closeEndpoints() throws Exception {
    // Null-safe: a backend may skip (assumption) inside newTransport, before every field is set.
    for (int i = toClose.size() - 1; i >= 0; i--) {
      toClose.get(i).close();
    }
    toClose.clear();
    for (AutoCloseable c : new AutoCloseable[] {receiver, publisher, arena}) {
      if (c != null) {
        c.close();
      }
    }
  }

  /** Native memory filled with a pattern derived from {@code seed}. */
  protected MemorySegment patterned(long size, long seed) {
    MemorySegment s = arena.allocate(size, 64);
    fill(s, seed);
    return s;
  }

  /** Fills {@code s} with the pattern of {@code seed}. */
  static void fill(MemorySegment s, long seed) {
    long size = s.byteSize();
    SplittableRandom r = new SplittableRandom(seed);
    long i = 0;
    for (; i + 8 <= size; i += 8) {
      s.set(ValueLayout.JAVA_LONG_UNALIGNED, i, r.nextLong());
    }
    for (; i < size; i++) {
      s.set(ValueLayout.JAVA_BYTE, i, (byte) r.nextInt());
    }
  }

  protected MemorySegment zeroed(long size) {
    return arena.allocate(size, 64);
  }

  protected MemoryRegistration registerOn(Transport t, MemorySegment s) {
    MemoryRegistration r = t.register(s);
    toClose.add(r);
    return r;
  }

  /** Registers sources on the publisher and connects the receiver to it. */
  protected void publish(MemorySegment... sources) {
    for (MemorySegment s : sources) {
      registerOn(publisher, s);
    }
    receiver.connect(PEER, publisher.localMetadata());
  }

  /** A source the publisher published and a destination the receiver registered, of one size. */
  protected record Published(MemorySegment src, MemorySegment dst) {}

  /**
   * Registers a patterned source of {@code size} bytes (pattern {@code seed}) on the publisher,
   * connects the receiver to it, and registers a zeroed destination of the same size there.
   */
  protected Published published(long size, long seed) {
    MemorySegment src = patterned(size, seed);
    MemorySegment dst = zeroed(size);
    publish(src);
    registerOn(receiver, dst);
    return new Published(src, dst);
  }

  protected static ReadDescriptor desc(
      MemorySegment src, long srcOff, MemorySegment dst, long dstOff, long n) {
    return new ReadDescriptor(PEER, src.address() + srcOff, dst.address() + dstOff, n);
  }

  protected static void assertSameBytes(
      MemorySegment expected, long eOff, MemorySegment actual, long aOff, long n, String what) {
    long mismatch = MemorySegment.mismatch(expected, eOff, eOff + n, actual, aOff, aOff + n);
    assertEquals(-1, mismatch, what + ": first differing byte at " + mismatch);
  }

  @Test
  void mixedSizesFrom1ByteTo64MiBLandByteExactAtTheirOffsets() {
    long[] sizes = {1, 3, 64, 4095, 4096, 65_537, MIB, 64 * MIB};
    long total = 0;
    for (long s : sizes) {
      total += s;
    }
    MemorySegment src = patterned(total + 4096, 1);
    MemorySegment dst = zeroed(total + 8192);
    publish(src);
    registerOn(receiver, dst);
    List<ReadDescriptor> batch = new ArrayList<>();
    // Sources run forwards, destinations backwards, with odd gaps so an offset mix-up shows.
    long s = 7;
    long d = total + 8192;
    long[][] placed = new long[sizes.length][];
    for (int i = 0; i < sizes.length; i++) {
      d -= sizes[i] + 1;
      batch.add(desc(src, s, dst, d, sizes[i]));
      placed[i] = new long[] {s, d, sizes[i]};
      s += sizes[i];
    }
    receiver.read(batch);
    for (long[] p : placed) {
      assertSameBytes(src, p[0], dst, p[1], p[2], p[2] + "-byte descriptor");
    }
    // Bytes between destinations stay untouched.
    assertEquals(0, dst.get(ValueLayout.JAVA_BYTE, placed[0][1] + placed[0][2]));
  }

  @Test
  void landingFoldsBoundAroundAReadMoveItsBytesOnceEachOrNeverAsTheBackendDeclares() {
    boolean folds = hasBehavior(TransportBehavior.FOLDS_CPU_COPIES);
    long size = 3 * 4096 + 5;
    MemorySegment src;
    if (hasBehavior(TransportBehavior.SUPPORTS_ALLOCATION)) {
      MemoryRegistration allocated = publisher.allocate(size);
      toClose.add(allocated);
      src = allocated.segment();
      fill(src, 11);
      receiver.connect(PEER, publisher.localMetadata());
    } else {
      src = patterned(size, 11);
      publish(src);
    }
    MemorySegment dst = zeroed(size + 64);
    registerOn(receiver, dst);
    long[] cuts = {0, 1000, 9001, size - 3, size};
    List<ReadDescriptor> batch = new ArrayList<>();
    for (int i = 0; i + 1 < cuts.length; i++) {
      batch.add(desc(src, cuts[i], dst, cuts[i] + 64, cuts[i + 1] - cuts[i]));
    }
    Thread caller = Thread.currentThread();
    List<String> calls = java.util.Collections.synchronizedList(new ArrayList<>());
    Map<ReadDescriptor, LandingFold> bound = new java.util.HashMap<>();
    for (int i = 0; i < 3; i++) { // the last read has no fold: a plain copy
      int read = i;
      long from = cuts[i];
      bound.put(
          batch.get(i),
          (s, d) -> {
            long same = MemorySegment.mismatch(s, 0, s.byteSize(), src, from, from + s.byteSize());
            calls.add(
                read
                    + ": "
                    + s.byteSize()
                    + " -> "
                    + d.byteSize()
                    + " bytes, "
                    + (same == -1 ? "its source" : "other bytes")
                    + (Thread.currentThread() == caller ? ", caller" : ", another thread"));
            MemorySegment.copy(s, 0, d, 0, s.byteSize());
          });
    }
    LandingFolds.of(bound)
        .during(
            () -> {
              receiver.read(batch);
              return null;
            });
    assertSameBytes(src, 0, dst, 64, size, "every read, folded or not");
    List<String> expected =
        folds
            ? List.of(
                "0: 1000 -> 1000 bytes, its source, caller",
                "1: 8001 -> 8001 bytes, its source, caller",
                "2: 3289 -> 3289 bytes, its source, caller")
            : List.of();
    assertEquals(expected, calls);
    // Outside the binding nothing is folded.
    dst.fill((byte) 0);
    receiver.read(batch);
    assertSameBytes(src, 0, dst, 64, size, "every read, without folds");
    assertEquals(expected, calls);
  }

  @Test
  void manySmallDescriptorsLandByteExact() {
    int n = 20_000;
    Published pair = published(n * 64L, 2);
    MemorySegment src = pair.src();
    MemorySegment dst = pair.dst();
    List<ReadDescriptor> batch = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      // Reverse the order of the 64-byte blocks.
      batch.add(desc(src, i * 64L, dst, (n - 1 - i) * 64L, 64));
    }
    receiver.read(batch);
    for (int i = 0; i < n; i += 997) {
      assertSameBytes(src, i * 64L, dst, (n - 1 - i) * 64L, 64, "block " + i);
    }
    assertSameBytes(src, 0, dst, (n - 1) * 64L, 64, "first block");
  }

  @Test
  void sourceOutsideRegionsIsRejectedBeforeAnyByteMoves() {
    Published pair = published(4096, 3);
    MemorySegment src = pair.src();
    MemorySegment dst = pair.dst();
    List<ReadDescriptor> batch =
        List.of(
            desc(src, 0, dst, 0, 1024),
            desc(src, 4000, dst, 1024, 200)); // runs 104 bytes past the end of the published region
    TransportException e = assertThrows(TransportException.class, () -> receiver.read(batch));
    assertTrue(e.getMessage().contains("#1"), "names the descriptor: " + e.getMessage());
    assertEquals(PEER, e.peer());
    assertEquals(-1, MemorySegment.mismatch(dst, 0, 4096, zeroed(4096), 0, 4096), "nothing moved");
  }

  @Test
  void destinationOutsideRegionsIsRejectedBeforeAnyByteMoves() {
    MemorySegment src = patterned(4096, 4);
    MemorySegment dst = zeroed(4096);
    MemorySegment unregistered = zeroed(4096);
    publish(src);
    registerOn(receiver, dst);
    List<ReadDescriptor> batch =
        List.of(desc(src, 0, dst, 0, 512), desc(src, 512, unregistered, 0, 512));
    TransportException e = assertThrows(TransportException.class, () -> receiver.read(batch));
    assertTrue(e.getMessage().contains("#1"), e.getMessage());
    assertEquals(-1, MemorySegment.mismatch(dst, 0, 4096, zeroed(4096), 0, 4096), "nothing moved");
    assertEquals(
        -1, MemorySegment.mismatch(unregistered, 0, 4096, zeroed(4096), 0, 4096), "nothing moved");
  }

  @Test
  void deregisteredMemory() {
    boolean revokes = hasBehavior(TransportBehavior.REVOKES_DEREGISTERED_MEMORY);
    assertEquals(
        revokes,
        receiver.revokesDeregisteredMemory(),
        "the endpoint's revokesDeregisteredMemory() must agree with the declared behaviour");
    MemorySegment src = patterned(4096, 5);
    MemorySegment dst = zeroed(4096);
    MemoryRegistration reg = publisher.register(src);
    receiver.connect(PEER, publisher.localMetadata());
    registerOn(receiver, dst);
    receiver.read(List.of(desc(src, 0, dst, 0, 4096)));
    reg.close();
    reg.close(); // idempotent
    MemorySegment fresh = zeroed(4096);
    registerOn(receiver, fresh);
    List<ReadDescriptor> again = List.of(desc(src, 0, fresh, 0, 4096));
    if (revokes) {
      assertThrows(TransportException.class, () -> receiver.read(again));
      assertSameBytes(zeroed(4096), 0, fresh, 0, 4096, "nothing moved from deregistered memory");
      return;
    }
    try {
      receiver.read(again);
    } catch (TransportException revokedAfterAll) {
      assertEquals(PEER, revokedAfterAll.peer(), revokedAfterAll.getMessage());
      return;
    }
    assertSameBytes(src, 0, fresh, 0, 4096, "bytes served from deregistered memory");
  }

  @Test
  void unknownSessionIsRejectedNamingIt() {
    MemorySegment dst = zeroed(64);
    registerOn(receiver, dst);
    TransportException e =
        assertThrows(
            TransportException.class,
            () -> receiver.read(List.of(new ReadDescriptor("nobody", 4096, dst.address(), 8))));
    assertEquals("nobody", e.peer());
    assertTrue(e.getMessage().contains("nobody"), e.getMessage());
  }

  @Test
  void emptyBatchAndZeroLengthDescriptorsAreNoOps() {
    MemorySegment dst = zeroed(64);
    registerOn(receiver, dst);
    TransportStats before = receiver.stats();
    receiver.read(List.of());
    // Zero-length descriptors are ignored even when their addresses point nowhere.
    receiver.read(
        List.of(new ReadDescriptor(PEER, 0, 0, 0), new ReadDescriptor("nobody", 1, 2, 0)));
    assertEquals(before, receiver.stats());
    assertNull(receiver.post(PEER, List.of(new ReadDescriptor(PEER, 0, 0, 0))));
  }

  @Test
  void countersAccumulateBytesAndReads() {
    Published pair = published(10_000, 6);
    MemorySegment src = pair.src();
    MemorySegment dst = pair.dst();
    TransportStats before = receiver.stats();
    receiver.read(
        List.of(
            desc(src, 0, dst, 0, 1000),
            desc(src, 1000, dst, 1000, 0),
            desc(src, 2000, dst, 2000, 3000)));
    receiver.read(List.of(desc(src, 5000, dst, 5000, 5000)));
    TransportStats after = receiver.stats();
    assertEquals(9000, after.bytesMoved() - before.bytesMoved());
    assertEquals(3, after.readsIssued() - before.readsIssued());
  }

  @Test
  void postThenAwaitAcrossTwoPeers() {
    Transport second = newPublisher("second");
    toClose.add(second);
    MemorySegment a = patterned(8192, 7);
    MemorySegment b = patterned(8192, 8);
    MemorySegment dst = zeroed(16384);
    publish(a);
    registerOn(second, b);
    receiver.connect("second", second.localMetadata());
    registerOn(receiver, dst);
    PendingRead pa = receiver.post(PEER, List.of(desc(a, 0, dst, 0, 8192)));
    PendingRead pb =
        receiver.post(
            "second",
            List.of(new ReadDescriptor("second", b.address(), dst.address() + 8192, 8192)));
    assertEquals(8192, pa.bytes());
    assertEquals("second", pb.session());
    receiver.awaitAll(List.of(pa, pb), Duration.ofSeconds(30));
    assertSameBytes(a, 0, dst, 0, 8192, "peer one");
    assertSameBytes(b, 0, dst, 8192, 8192, "peer two");
    // One mixed batch through read() groups by peer.
    MemorySegment dst2 = zeroed(16384);
    registerOn(receiver, dst2);
    receiver.read(
        List.of(
            new ReadDescriptor("second", b.address(), dst2.address(), 4096),
            desc(a, 0, dst2, 4096, 4096),
            new ReadDescriptor("second", b.address() + 4096, dst2.address() + 8192, 4096)));
    assertSameBytes(b, 0, dst2, 0, 4096, "mixed 1");
    assertSameBytes(a, 0, dst2, 4096, 4096, "mixed 2");
    assertSameBytes(b, 4096, dst2, 8192, 4096, "mixed 3");
  }

  @Test
  void twoThreadsIssueBatchesConcurrently() throws Exception {
    int blocks = 256;
    long block = 16 * 1024;
    MemorySegment src = patterned(blocks * block, 9);
    MemorySegment dstA = zeroed(blocks * block);
    MemorySegment dstB = zeroed(blocks * block);
    publish(src);
    registerOn(receiver, dstA);
    registerOn(receiver, dstB);
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      List<Callable<Void>> jobs = new ArrayList<>();
      for (MemorySegment dst : List.of(dstA, dstB)) {
        jobs.add(
            () -> {
              for (int round = 0; round < 20; round++) {
                List<ReadDescriptor> batch = new ArrayList<>();
                for (int i = 0; i < blocks; i++) {
                  batch.add(desc(src, i * block, dst, i * block, block));
                }
                receiver.read(batch);
              }
              return null;
            });
      }
      for (Future<Void> f : pool.invokeAll(jobs)) {
        f.get();
      }
    } finally {
      pool.shutdownNow();
    }
    assertSameBytes(src, 0, dstA, 0, blocks * block, "thread A");
    assertSameBytes(src, 0, dstB, 0, blocks * block, "thread B");
    assertEquals(2L * 20 * blocks * block, receiver.stats().bytesMoved());
  }

  @Test
  void heapMemoryCannotBeRegistered() {
    assertThrows(
        TransportException.class, () -> receiver.register(MemorySegment.ofArray(new byte[64])));
  }

  @Test
  void closeIsIdempotentAndUseAfterCloseFailsClearly() {
    MemorySegment dst = zeroed(64);
    Transport t = newTransport("short-lived");
    t.register(dst);
    t.close();
    assertDoesNotThrow(t::close);
    TransportException e =
        assertThrows(
            TransportException.class, () -> t.read(List.of(new ReadDescriptor("x", 1, 2, 3))));
    assertTrue(e.getMessage().contains("closed"), e.getMessage());
    assertThrows(TransportException.class, () -> t.register(zeroed(64)));
    assertThrows(TransportException.class, t::localMetadata);
  }

  @Test
  void readsFromItsOwnSessionStayLocal() {
    MemorySegment src = patterned(1024, 10);
    MemorySegment dst = zeroed(1024);
    registerOn(receiver, src);
    registerOn(receiver, dst);
    receiver.read(
        List.of(new ReadDescriptor(receiver.localSession(), src.address(), dst.address(), 1024)));
    assertSameBytes(src, 0, dst, 0, 1024, "local read");
    assertArrayEquals(src.toArray(ValueLayout.JAVA_BYTE), dst.toArray(ValueLayout.JAVA_BYTE));
  }

  @Test
  void peersInOtherProcesses() throws Exception {
    long bytes = 3 * MIB + 17;
    try (PublisherProcess peer =
        PublisherProcess.launch(peerTransportName(), PEER)
            .seed(77)
            .regions(List.of(bytes))
            .jvmArguments(peerJvmArguments())
            .start(Duration.ofSeconds(60))) {
      PublisherProcess.Region region = peer.regions().getFirst();
      MemorySegment dst = zeroed(bytes);
      registerOn(receiver, dst);
      ReadDescriptor d = new ReadDescriptor(PEER, region.base(), dst.address(), bytes);
      if (hasBehavior(TransportBehavior.SUPPORTS_PEERS_IN_OTHER_PROCESSES)) {
        receiver.connect(PEER, peer.metadata());
        receiver.read(List.of(d), Duration.ofSeconds(60));
        assertEquals(
            -1,
            peer.pattern().mismatch(dst, 0, 0, 0, bytes),
            "read from another process: first wrong byte");
      } else {
        TransportException e =
            assertThrows(
                TransportException.class,
                () -> {
                  receiver.connect(PEER, peer.metadata());
                  receiver.read(List.of(d), Duration.ofSeconds(10));
                });
        assertTrue(
            e.getMessage().contains(PEER),
            "the error should name peer '" + PEER + "': " + e.getMessage());
      }
    }
  }

  @Test
  void allocationByTheTransport() throws Exception {
    if (hasBehavior(TransportBehavior.SUPPORTS_ALLOCATION)) {
      MemoryRegistration src = publisher.allocate(MIB);
      toClose.add(src);
      fill(src.segment(), 5);
      receiver.connect(PEER, publisher.localMetadata());
      MemorySegment dst = zeroed(MIB);
      registerOn(receiver, dst);
      receiver.read(List.of(new ReadDescriptor(PEER, src.segment().address(), dst.address(), MIB)));
      assertSameBytes(patterned(MIB, 5), 0, dst, 0, MIB, "read of transport-allocated memory");
    } else {
      RuntimeException e = assertThrows(RuntimeException.class, () -> publisher.allocate(MIB));
      assertTrue(
          e instanceof UnsupportedOperationException || e instanceof TransportException,
          e.toString());
      assertTrue(
          String.valueOf(e.getMessage()).contains(publisher.name()),
          "the error should name transport '" + publisher.name() + "': " + e.getMessage());
    }
  }

  @Test
  void deviceMemory() {
    MemorySegment content = patterned(MIB, 9);
    MemorySegment device = deviceMemory(MIB, content);
    if (hasBehavior(TransportBehavior.SUPPORTS_DEVICE_MEMORY)) {
      assertTrue(
          device != null, "declares SUPPORTS_DEVICE_MEMORY but deviceMemory() supplies no buffer");
      registerOn(publisher, device);
      receiver.connect(PEER, publisher.localMetadata());
      MemorySegment dstDevice = deviceMemory(MIB, zeroed(MIB));
      registerOn(receiver, dstDevice);
      receiver.read(List.of(new ReadDescriptor(PEER, device.address(), dstDevice.address(), MIB)));
      MemorySegment back = zeroed(MIB);
      copyFromDevice(dstDevice, back);
      assertSameBytes(content, 0, back, 0, MIB, "device-to-device read");
    } else if (device != null) {
      TransportException e =
          assertThrows(TransportException.class, () -> registerOn(publisher, device));
      assertTrue(
          e.getMessage().toLowerCase(java.util.Locale.ROOT).contains("device"), e.getMessage());
    } else {
      // No device buffer on this machine: the declared "no" is consistent with the hooks.
      assertThrows(UnsupportedOperationException.class, () -> copyFromDevice(content, zeroed(MIB)));
    }
  }

  @Test
  void reconnectingAPeerSeesTheRegionsItRegisteredSince() {
    MemorySegment first = patterned(4096, 11);
    MemorySegment later = patterned(4096, 12);
    MemorySegment dst = zeroed(8192);
    publish(first);
    registerOn(receiver, dst);
    registerOn(publisher, later); // mem reads live registrations; the others the metadata
    receiver.connect(PEER, publisher.localMetadata());
    receiver.read(List.of(desc(first, 0, dst, 0, 4096), desc(later, 0, dst, 4096, 4096)));
    assertSameBytes(first, 0, dst, 0, 4096, "first region");
    assertSameBytes(later, 0, dst, 4096, 4096, "region registered after the first connect");
  }

  @Test
  void metadataThatIsNotThisBackendsIsRefusedNamingThePeer() {
    TransportException e =
        assertThrows(
            TransportException.class, () -> receiver.connect(PEER, new byte[] {1, 2, 3, 4, 5}));
    assertEquals(PEER, e.peer(), e.getMessage());
    assertTrue(e.getMessage().contains(PEER), e.getMessage());
  }

  @Test
  void anOverlappingRegistrationIsRefusedAndTheFirstStaysReadable() {
    MemorySegment src = patterned(8192, 13);
    MemorySegment dst = zeroed(8192);
    registerOn(publisher, src);
    TransportException e =
        assertThrows(TransportException.class, () -> registerOn(publisher, src.asSlice(100, 10)));
    assertTrue(e.getMessage().contains("overlap"), e.getMessage());
    receiver.connect(PEER, publisher.localMetadata());
    registerOn(receiver, dst);
    receiver.read(List.of(desc(src, 0, dst, 0, 8192)));
    assertSameBytes(src, 0, dst, 0, 8192, "the region registered first");
  }

  @Test
  void aDescriptorSpanningTwoAdjacentRegionsIsRejected() {
    MemorySegment both = patterned(8192, 14);
    MemorySegment dst = zeroed(8192);
    publish(both.asSlice(0, 4096), both.asSlice(4096, 4096));
    registerOn(receiver, dst);
    TransportException e =
        assertThrows(
            TransportException.class, () -> receiver.read(List.of(desc(both, 4000, dst, 0, 200))));
    assertTrue(e.getMessage().contains("#0"), e.getMessage());
    assertSameBytes(zeroed(8192), 0, dst, 0, 8192, "nothing moved");
    receiver.read(List.of(desc(both, 0, dst, 0, 4096), desc(both, 4096, dst, 4096, 4096)));
    assertSameBytes(both, 0, dst, 0, 8192, "each region on its own");
  }

  @Test
  void theFirstAndLastByteOfARegionAreReadable() {
    MemorySegment src = patterned(4096, 15);
    MemorySegment dst = zeroed(2);
    publish(src);
    registerOn(receiver, dst);
    receiver.read(List.of(desc(src, 0, dst, 0, 1), desc(src, 4095, dst, 1, 1)));
    assertEquals(src.get(ValueLayout.JAVA_BYTE, 0), dst.get(ValueLayout.JAVA_BYTE, 0));
    assertEquals(src.get(ValueLayout.JAVA_BYTE, 4095), dst.get(ValueLayout.JAVA_BYTE, 1));
  }

  @Test
  void aClosedDestinationRegistrationRefusesReadsIntoIt() {
    MemorySegment src = patterned(4096, 16);
    MemorySegment dst = zeroed(4096);
    publish(src);
    MemoryRegistration target = receiver.register(dst);
    receiver.read(List.of(desc(src, 0, dst, 0, 4096)));
    target.close();
    target.close(); // idempotent
    dst.fill((byte) 0);
    TransportException e =
        assertThrows(
            TransportException.class, () -> receiver.read(List.of(desc(src, 0, dst, 0, 4096))));
    assertTrue(e.getMessage().contains("#0"), e.getMessage());
    assertSameBytes(zeroed(4096), 0, dst, 0, 4096, "nothing moved into deregistered memory");
  }

  @Test
  void memoryRegisteredAgainAfterItsCloseIsReadAgain() {
    MemorySegment src = patterned(4096, 17);
    MemorySegment dst = zeroed(4096);
    publisher.register(src).close();
    registerOn(publisher, src);
    receiver.connect(PEER, publisher.localMetadata());
    MemoryRegistration target = receiver.register(dst);
    target.close();
    registerOn(receiver, dst);
    receiver.read(List.of(desc(src, 0, dst, 0, 4096)));
    assertSameBytes(src, 0, dst, 0, 4096, "read after registering again");
  }

  @Test
  void isConnectedFollowsConnect() {
    assertTrue(receiver.isConnected(receiver.localSession()), "its own session");
    assertTrue(!receiver.isConnected(PEER), "not connected yet");
    publish(patterned(64, 18));
    assertTrue(receiver.isConnected(PEER), "connected");
    assertTrue(!receiver.isConnected("nobody"), "never connected");
  }

  @Test
  void oneBadDescriptorAmongAThousandMovesNothing() {
    int n = 1000;
    Published pair = published(n * 64L, 19);
    MemorySegment src = pair.src();
    MemorySegment dst = pair.dst();
    List<ReadDescriptor> batch = new ArrayList<>(n);
    for (int i = 0; i < n - 1; i++) {
      batch.add(desc(src, i * 64L, dst, i * 64L, 64));
    }
    batch.add(desc(src, (n - 1) * 64L, dst, (n - 1) * 64L, 65)); // one byte past the region
    TransportException e = assertThrows(TransportException.class, () -> receiver.read(batch));
    assertTrue(e.getMessage().contains("#" + (n - 1)), e.getMessage());
    assertSameBytes(zeroed(n * 64L), 0, dst, 0, n * 64L, "nothing moved");
  }

  @Test
  void oneSourceReadIntoTwoDestinationsInOneBatch() {
    MemorySegment src = patterned(4096, 20);
    MemorySegment a = zeroed(4096);
    MemorySegment b = zeroed(4096);
    publish(src);
    registerOn(receiver, a);
    registerOn(receiver, b);
    receiver.read(List.of(desc(src, 0, a, 0, 4096), desc(src, 0, b, 0, 4096)));
    assertSameBytes(src, 0, a, 0, 4096, "first copy");
    assertSameBytes(src, 0, b, 0, 4096, "second copy");
  }

  @Test
  void aPostedGroupMustNameOneSession() {
    Published pair = published(64, 21);
    MemorySegment src = pair.src();
    MemorySegment dst = pair.dst();
    ReadDescriptor stranger = new ReadDescriptor("nobody", src.address(), dst.address(), 64);
    assertThrows(
        TransportException.class,
        () -> receiver.post(PEER, List.of(desc(src, 0, dst, 0, 32), stranger)));
  }

  @Test
  void awaitingNothingIsANoOp() {
    TransportStats before = receiver.stats();
    receiver.awaitAll(List.of(), Duration.ofSeconds(1));
    List<PendingRead> nulls = new ArrayList<>();
    nulls.add(null);
    receiver.awaitAll(nulls, Duration.ofSeconds(1));
    assertEquals(before, receiver.stats());
  }

  @Test
  void oddOffsetsAndLengthsLandExactly() {
    Published pair = published(1 << 16, 22);
    MemorySegment src = pair.src();
    MemorySegment dst = pair.dst();
    List<ReadDescriptor> batch = new ArrayList<>();
    long s = 1;
    long d = 3;
    for (int len = 1; len <= 255; len += 2) {
      batch.add(desc(src, s, dst, d, len));
      s += len + 5;
      d += len + 7;
    }
    receiver.read(batch);
    for (ReadDescriptor r : batch) {
      long so = r.srcAddr() - src.address();
      long dof = r.dstAddr() - dst.address();
      assertSameBytes(src, so, dst, dof, r.nbytes(), r.nbytes() + " bytes at " + so);
    }
    assertEquals(0, dst.get(ValueLayout.JAVA_BYTE, 0), "before the first destination");
  }

  @Test
  void aRegionPublishedEmptyThenFilledIsReadAfterReconnecting() {
    receiver.connect(PEER, publisher.localMetadata());
    MemorySegment src = patterned(4096, 23);
    MemorySegment dst = zeroed(4096);
    registerOn(receiver, dst);
    List<ReadDescriptor> read = List.of(desc(src, 0, dst, 0, 4096));
    TransportException e = assertThrows(TransportException.class, () -> receiver.read(read));
    assertEquals(PEER, e.peer(), e.getMessage());
    publish(src);
    receiver.read(read);
    assertSameBytes(src, 0, dst, 0, 4096, "after reconnecting");
  }

  @Test
  void healthyAfterReadsAndNotAfterClose() {
    Published pair = published(4096, 24);
    MemorySegment src = pair.src();
    MemorySegment dst = pair.dst();
    receiver.read(List.of(desc(src, 0, dst, 0, 4096)), Duration.ofSeconds(30));
    assertTrue(receiver.isHealthy(), "healthy after a read");
    assertThrows(
        TransportException.class, () -> receiver.read(List.of(desc(src, 0, dst, 1, 4096))));
    assertTrue(receiver.isHealthy(), "a batch refused before any byte moved is no fault");
    Transport t = newTransport("closing");
    t.close();
    assertTrue(!t.isHealthy(), "a closed endpoint is not healthy");
  }

  @Test
  void theDefaultTimeoutIsPositiveAndNamedSessionIsKept() {
    assertTrue(
        receiver.defaultTimeout().compareTo(Duration.ZERO) > 0, "" + receiver.defaultTimeout());
    assertEquals("receiver", receiver.localSession());
    assertEquals(PEER, publisher.localSession());
    assertTrue(!receiver.name().isBlank(), "a name");
  }

  @Test
  void localReadsOutsideRegisteredMemoryAreRejected() {
    MemorySegment src = patterned(1024, 25);
    MemorySegment dst = zeroed(1024);
    MemorySegment unregistered = patterned(1024, 26);
    registerOn(receiver, src);
    registerOn(receiver, dst);
    String self = receiver.localSession();
    List<ReadDescriptor> fromOutside =
        List.of(new ReadDescriptor(self, unregistered.address(), dst.address(), 1024));
    assertThrows(TransportException.class, () -> receiver.read(fromOutside));
    List<ReadDescriptor> intoOutside =
        List.of(new ReadDescriptor(self, src.address(), unregistered.address(), 1024));
    assertThrows(TransportException.class, () -> receiver.read(intoOutside));
    assertSameBytes(zeroed(1024), 0, dst, 0, 1024, "nothing moved");
    assertSameBytes(patterned(1024, 26), 0, unregistered, 0, 1024, "nothing moved");
  }

  @Test
  void registeringWhileReadingLeavesTheReadsExact() throws Exception {
    Published pair = published(1 << 20, 27);
    MemorySegment src = pair.src();
    MemorySegment dst = pair.dst();
    ExecutorService pool = Executors.newSingleThreadExecutor();
    try {
      Future<Integer> churn =
          pool.submit(
              () -> {
                int rounds = 0;
                for (; rounds < 50; rounds++) {
                  receiver.register(zeroed(4096)).close();
                }
                return rounds;
              });
      for (int round = 0; round < 20; round++) {
        receiver.read(List.of(desc(src, 0, dst, 0, 1 << 20)));
      }
      assertEquals(50, churn.get());
    } finally {
      pool.shutdownNow();
    }
    assertSameBytes(src, 0, dst, 0, 1 << 20, "reads while another thread registered");
  }

  @Test
  void closingAnEndpointClosesItsRegistrations() {
    Transport t = newTransport("owner");
    MemorySegment s = zeroed(4096);
    MemoryRegistration r = t.register(s);
    t.close();
    assertDoesNotThrow(r::close, "closing a registration after its endpoint is harmless");
    Transport again = newTransport("owner-again");
    toClose.add(again);
    assertDoesNotThrow(() -> again.register(s).close(), "the memory is free to register again");
  }

  @Test
  void readAfterThePublisherClosedFailsOrServesWhatItHeld() {
    MemorySegment src = patterned(4096, 28);
    MemorySegment dst = zeroed(4096);
    Transport gone = newPublisher("gone");
    gone.register(src);
    receiver.connect("gone", gone.localMetadata());
    registerOn(receiver, dst);
    gone.close();
    List<ReadDescriptor> read =
        List.of(new ReadDescriptor("gone", src.address(), dst.address(), 4096));
    if (hasBehavior(TransportBehavior.REVOKES_DEREGISTERED_MEMORY)) {
      TransportException e = assertThrows(TransportException.class, () -> receiver.read(read));
      assertEquals("gone", e.peer(), e.getMessage());
      assertSameBytes(zeroed(4096), 0, dst, 0, 4096, "nothing moved from a closed publisher");
      return;
    }
    try {
      receiver.read(read, Duration.ofSeconds(10));
    } catch (TransportException refused) {
      assertEquals("gone", refused.peer(), refused.getMessage());
      return;
    }
    assertSameBytes(src, 0, dst, 0, 4096, "bytes served after the publisher closed");
  }

  @Test
  void aPostedBatchReportsItsBytesAndDescriptors() {
    Published pair = published(4096, 29);
    MemorySegment src = pair.src();
    MemorySegment dst = pair.dst();
    PendingRead p =
        receiver.post(
            PEER,
            List.of(
                desc(src, 0, dst, 0, 1000),
                desc(src, 0, dst, 1000, 0),
                desc(src, 1000, dst, 1000, 24)));
    assertEquals(PEER, p.session());
    assertEquals(1024, p.bytes());
    assertEquals(2, p.descriptorCount(), "the empty descriptor is dropped");
    receiver.awaitAll(List.of(p), Duration.ofSeconds(30));
    assertSameBytes(src, 0, dst, 0, 1024, "posted batch");
  }

  @Test
  void theSameBatchReadTwiceLandsTheSameBytes() {
    Published pair = published(65_536, 30);
    MemorySegment src = pair.src();
    MemorySegment dst = pair.dst();
    List<ReadDescriptor> batch = List.of(desc(src, 0, dst, 0, 65_536));
    receiver.read(batch);
    dst.fill((byte) 0);
    receiver.read(batch);
    assertSameBytes(src, 0, dst, 0, 65_536, "second read of the same batch");
    assertEquals(2L * 65_536, receiver.stats().bytesMoved());
  }

  @Test
  void reconnectingASessionToAnotherPublisherReplacesIt() {
    MemorySegment a = patterned(4096, 31);
    MemorySegment b = patterned(4096, 32);
    MemorySegment dst = zeroed(4096);
    publish(a);
    Transport other = newPublisher("other");
    toClose.add(other);
    registerOn(other, b);
    registerOn(receiver, dst);
    receiver.connect(PEER, other.localMetadata());
    TransportException e =
        assertThrows(
            TransportException.class, () -> receiver.read(List.of(desc(a, 0, dst, 0, 64))));
    assertEquals(PEER, e.peer(), "the old publisher's regions are gone: " + e.getMessage());
    receiver.read(List.of(new ReadDescriptor(PEER, b.address(), dst.address(), 4096)));
    assertSameBytes(b, 0, dst, 0, 4096, "read from the publisher the session now names");
  }

  @Test
  void manyBatchesPostedBeforeOneAwaitAllLandExactly() {
    Published pair = published(64 * 1024, 33);
    MemorySegment src = pair.src();
    MemorySegment dst = pair.dst();
    List<PendingRead> posted = new ArrayList<>();
    for (int i = 0; i < 16; i++) {
      posted.add(receiver.post(PEER, List.of(desc(src, i * 4096L, dst, (15 - i) * 4096L, 4096))));
    }
    receiver.awaitAll(posted, Duration.ofSeconds(30));
    for (int i = 0; i < 16; i++) {
      assertSameBytes(src, i * 4096L, dst, (15 - i) * 4096L, 4096, "batch " + i);
    }
    assertEquals(16, receiver.stats().readsIssued());
  }
}
