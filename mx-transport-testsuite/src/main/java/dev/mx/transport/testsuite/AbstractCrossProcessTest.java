package dev.mx.transport.testsuite;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.error.TransportException;
import dev.mx.api.memory.MemoryOps;
import dev.mx.api.memory.MemoryOpsProvider;
import dev.mx.api.transport.MemoryKind;
import dev.mx.api.transport.MemoryRegistration;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.api.transport.Transport;
import dev.mx.transport.testsuite.tool.PublisherProcess;
import dev.mx.transport.testsuite.tool.PublisherProcess.Region;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * A child JVM ({@link PublisherProcess}) publishes 256 MiB in four regions filled with a known
 * pattern; this JVM reads it and checks every byte it read. In host memory three regions are the
 * child's own and one comes from its transport's {@code allocate}; a backend that serves device
 * memory ({@link #memoryKind()}) publishes four device regions and reads into device memory,
 * checked through that kind's {@link MemoryOps}. A backend names the transport the child serves and
 * supplies the receiving endpoint; every backend, NIXL and cuda-ipc included, runs this one class.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
public abstract class AbstractCrossProcessTest {
  protected static final long MIB = 1 << 20;
  protected static final String PEER = "trainer-0";
  private static final Duration START = Duration.ofSeconds(60);
  protected PublisherProcess publisher;
  protected Arena arena;
  protected Transport receiver;
  protected MemorySegment dst;

  /** The transport the child publisher serves ({@code --transport} of the pattern publisher). */
  protected abstract String publisherTransport();

  /**
   * Whether the backend works here; when not, every test skips through {@link #assumeAvailable()}.
   */
  protected abstract boolean isAvailable();

  /** Skips (or, under {@code -Dmx.test.requireNative=true}, fails) with the backend's cause. */
  protected abstract void assumeAvailable();

  /** A receiving endpoint of the backend. */
  protected abstract Transport newReceiver(String session, Duration timeout);

  /** The memory both sides publish and read into: host unless the backend serves a device. */
  protected MemoryKind memoryKind() {
    return MemoryKind.HOST;
  }

  /** Extra JVM arguments for the child publisher (e.g. which native library it loads). */
  protected List<String> publisherJvmArguments() {
    return List.of();
  }

  /** Operations on {@link #memoryKind()}; null for host memory, which the test touches itself. */
  private MemoryOps deviceOps;

  /**
   * Where {@link #dst}'s bytes are checked: {@code dst} itself, or a host copy of device memory.
   */
  private MemorySegment landed;

  private MemoryRegistration deviceDst;

  @BeforeAll
  @SuppressWarnings("MustBeClosedChecker") // closed in @AfterAll
  void startPublisher() throws Exception {
    if (!isAvailable()) {
      return; // each test then skips (or fails under -Dmx.test.requireNative=true) with the cause
    }
    arena = Arena.ofShared();
    MemoryKind kind = memoryKind();
    PublisherProcess.Launch launch =
        PublisherProcess.launch(publisherTransport(), PEER)
            .seed(42)
            .memory(kind)
            .jvmArguments(publisherJvmArguments());
    if (kind.isDevice()) {
      deviceOps = MemoryOpsProvider.forKind(kind, MemoryOpsProvider.registry());
      publisher = launch.regions(List.of(96 * MIB, 64 * MIB, 64 * MIB, 32 * MIB)).start(START);
      deviceDst = deviceOps.allocate(256 * MIB);
      dst = deviceDst.segment();
      landed = arena.allocate(256 * MIB, 4096);
    } else {
      // The last region comes from the publisher's Transport.allocate, the others are its own.
      publisher =
          launch
              .regions(List.of(96 * MIB, 64 * MIB, 64 * MIB))
              .allocated(List.of(32 * MIB))
              .start(START);
      assertTrue(publisher.regions().get(3).allocated());
      dst = arena.allocate(256 * MIB, 4096);
      landed = dst;
    }
    receiver = newReceiver("inference-0", Duration.ofSeconds(60));
    receiver.register(dst, kind);
    receiver.connect(PEER, publisher.metadata());
  }

  /** Sets {@code [0, n)} of the destination to {@code value}. */
  private void fillDestination(long n, byte value) {
    if (deviceOps == null) {
      dst.asSlice(0, n).fill(value);
      return;
    }
    landed.asSlice(0, n).fill(value);
    deviceOps.copyFromHost(landed, 0, dst, 0, n);
  }

  /** The destination's first {@code n} bytes as the host sees them, after the reads. */
  private MemorySegment landedBytes(long n) {
    if (deviceOps != null) {
      deviceOps.copyToHost(dst, 0, landed, 0, n);
    }
    return landed;
  }

  @AfterAll
  void stopPublisher() throws Exception {
    if (receiver != null) {
      receiver.close();
    }
    if (deviceDst != null) {
      deviceDst.close();
    }
    if (arena != null) {
      arena.close();
    }
    if (publisher != null) {
      publisher.close();
    }
  }

  @BeforeEach
  void backendIsAvailable() {
    assumeAvailable();
  }

  /** A descriptor and where its bytes come from in the pattern. */
  private record Placed(ReadDescriptor descriptor, int region, long regionOffset) {}

  @Test
  void aPlansWorthOfMixedSizeDescriptorsCoversAll256MiBByteExact() {
    // Cut every region into runs of 1 byte to 256 KiB, one in twenty up to 8 MiB (log-uniform, so
    // most are
    // small, as in a plan), then
    // place the runs in shuffled order back to back in the destination: a permutation of all 256
    // MiB.
    Random random = new Random(7);
    List<long[]> runs = new ArrayList<>(); // {region, offset, length}
    for (Region r : publisher.regions()) {
      for (long off = 0; off < r.length(); ) {
        long max = random.nextInt(20) == 0 ? 8 * MIB : 256 * 1024;
        long len =
            Math.min(
                r.length() - off,
                Math.max(1, (long) Math.exp(random.nextDouble() * Math.log(max))));
        runs.add(new long[] {r.index(), off, len});
        off += len;
      }
    }
    Collections.shuffle(runs, random);
    List<Placed> plan = new ArrayList<>(runs.size());
    long at = 0;
    for (long[] run : runs) {
      Region r = publisher.regions().get((int) run[0]);
      plan.add(
          new Placed(
              new ReadDescriptor(PEER, r.base() + run[1], dst.address() + at, run[2]),
              (int) run[0],
              run[1]));
      at += run[2];
    }
    assertEquals(256 * MIB, at, "the runs cover every published byte");
    assertTrue(plan.size() > 1000, "a plan's worth of descriptors: " + plan.size());
    fillDestination(256 * MIB, (byte) 0x5a);

    receiver.read(plan.stream().map(Placed::descriptor).toList());
    MemorySegment got = landedBytes(256 * MIB);

    for (Placed p : plan) {
      ReadDescriptor d = p.descriptor();
      long m =
          publisher
              .pattern()
              .mismatch(got, d.dstAddr() - dst.address(), p.region(), p.regionOffset(), d.nbytes());
      assertEquals(
          -1,
          m,
          () ->
              d
                  + " (region "
                  + p.region()
                  + " offset "
                  + p.regionOffset()
                  + "): first wrong byte at "
                  + m);
    }
  }

  @Test
  void hundredThousand64ByteDescriptorsLandByteExact() {
    int n = 100_000;
    Random random = new Random(11);
    List<Placed> plan = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      Region r = publisher.regions().get(random.nextInt(publisher.regions().size()));
      long off = random.nextLong(r.length() - 64);
      plan.add(
          new Placed(
              new ReadDescriptor(PEER, r.base() + off, dst.address() + i * 64L, 64),
              r.index(),
              off));
    }
    fillDestination(n * 64L, (byte) 0);

    receiver.read(plan.stream().map(Placed::descriptor).toList());
    MemorySegment got = landedBytes(n * 64L);

    for (Placed p : plan) {
      long m =
          publisher
              .pattern()
              .mismatch(
                  got, p.descriptor().dstAddr() - dst.address(), p.region(), p.regionOffset(), 64);
      assertEquals(-1, m, () -> p.descriptor() + ": first wrong byte at " + m);
    }
  }

  @Test
  void aDescriptorOutsideThePublishedRegionsIsRejectedBeforeAnyRead() {
    Region first = publisher.regions().get(0);
    Region last = publisher.regions().get(3);
    fillDestination(4 * MIB, (byte) 0x33);
    List<ReadDescriptor> batch =
        List.of(
            new ReadDescriptor(PEER, first.base(), dst.address(), MIB),
            new ReadDescriptor(
                PEER,
                last.base() + last.length() - 4096,
                dst.address() + MIB,
                4097), // one byte too far
            new ReadDescriptor(PEER, first.base() + MIB, dst.address() + 2 * MIB, MIB));
    TransportException e = assertThrows(TransportException.class, () -> receiver.read(batch));
    assertEquals(PEER, e.peer());
    assertTrue(e.getMessage().contains("#1") && e.getMessage().contains(PEER), e.getMessage());
    MemorySegment unchanged = landedBytes(4 * MIB);
    for (long i = 0; i < 4 * MIB; i++) {
      if (unchanged.get(java.lang.foreign.ValueLayout.JAVA_BYTE, i) != 0x33) {
        throw new AssertionError(
            "byte " + i + " of the destination changed although the batch was rejected");
      }
    }
    // Memory the publisher never registered (just below its first region) is rejected the same way.
    TransportException below =
        assertThrows(
            TransportException.class,
            () ->
                receiver.read(
                    List.of(new ReadDescriptor(PEER, first.base() - 64, dst.address(), 64))));
    assertTrue(below.getMessage().contains("#0"), below.getMessage());
    // ... and the endpoint still works afterwards.
    receiver.read(List.of(new ReadDescriptor(PEER, first.base(), dst.address(), 4096)));
    assertEquals(-1, publisher.pattern().mismatch(landedBytes(4096), 0, 0, 0, 4096));
  }
}
