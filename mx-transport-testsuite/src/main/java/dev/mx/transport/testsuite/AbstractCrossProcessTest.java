package dev.mx.transport.testsuite;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.error.TransportException;
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
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * A child JVM publishes 256 MiB in four regions (three of its own memory, one from its transport's
 * {@code allocate}) filled with a known pattern; this JVM reads it and checks every byte it read. A
 * backend names the transport the child serves and supplies the receiving endpoint.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
public abstract class AbstractCrossProcessTest {
  protected static final long MIB = 1 << 20;
  protected static final String PEER = "trainer-0";
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

  @BeforeAll
  @SuppressWarnings("MustBeClosedChecker") // closed in @AfterAll
  void startPublisher() throws Exception {
    if (!isAvailable()) {
      return; // each test then skips (or fails under -Dmx.test.requireNative=true) with the cause
    }
    // The last region comes from the publisher's Transport.allocate, the others are its own memory.
    publisher =
        PublisherProcess.start(
            publisherTransport(),
            PEER,
            42,
            List.of(96 * MIB, 64 * MIB, 64 * MIB),
            List.of(32 * MIB),
            Map.of(),
            Duration.ofSeconds(60));
    assertTrue(publisher.regions().get(3).allocated());
    arena = Arena.ofShared();
    receiver = newReceiver("inference-0", Duration.ofSeconds(60));
    dst = arena.allocate(256 * MIB, 4096);
    receiver.register(dst);
    receiver.connect(PEER, publisher.metadata());
  }

  @AfterAll
  void stopPublisher() throws Exception {
    if (receiver != null) {
      receiver.close();
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
    dst.fill((byte) 0x5a);

    receiver.read(plan.stream().map(Placed::descriptor).toList());

    for (Placed p : plan) {
      ReadDescriptor d = p.descriptor();
      long m =
          publisher
              .pattern()
              .mismatch(dst, d.dstAddr() - dst.address(), p.region(), p.regionOffset(), d.nbytes());
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
    dst.fill((byte) 0);

    receiver.read(plan.stream().map(Placed::descriptor).toList());

    for (Placed p : plan) {
      long m =
          publisher
              .pattern()
              .mismatch(
                  dst, p.descriptor().dstAddr() - dst.address(), p.region(), p.regionOffset(), 64);
      assertEquals(-1, m, () -> p.descriptor() + ": first wrong byte at " + m);
    }
  }

  @Test
  void aDescriptorOutsideThePublishedRegionsIsRejectedBeforeAnyRead() {
    Region first = publisher.regions().get(0);
    Region last = publisher.regions().get(3);
    dst.asSlice(0, 4 * MIB).fill((byte) 0x33);
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
    for (long i = 0; i < 4 * MIB; i++) {
      if (dst.get(java.lang.foreign.ValueLayout.JAVA_BYTE, i) != 0x33) {
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
    assertEquals(-1, publisher.pattern().mismatch(dst, 0, 0, 0, 4096));
  }
}
