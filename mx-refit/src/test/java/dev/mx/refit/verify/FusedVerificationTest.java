package dev.mx.refit.verify;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.error.DigestMismatchException;
import dev.mx.api.plan.Shard;
import dev.mx.api.plan.SourceInfo;
import dev.mx.api.refit.WireGroups;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.digest.CpuDigestProvider;
import dev.mx.digest.ShardDigest;
import dev.mx.refit.VerifyMode;
import dev.mx.refit.stage.Descriptors;
import dev.mx.refit.stage.LandedWork;
import dev.mx.refit.stage.PipelinedWire;
import dev.mx.refit.wire.FusedWire;
import dev.mx.transport.mem.MemTransportProvider;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Verification riding on the copy: over the real {@code mem} transport each read of a shard is
 * copied and digested in one pass by the wire thread, the digest equals the publisher's, and one
 * flipped bit anywhere in the shard (its first byte, the middle, the ragged tail) is a mismatch
 * naming it.
 */
class FusedVerificationTest {
  /** Three whole rows, 1000 tail words and a ragged tail of three bytes. */
  private static final long SHARD_BYTES = 3 * 4096 + 4000 + 3;

  /** The shard read in pieces cut off word and row edges, over two landing batches. */
  private static final long[] CUTS = {0, 1, 4099, 9000, 12_290, SHARD_BYTES};

  private static final class Rig implements AutoCloseable {
    final Arena arena = Arena.ofShared();
    final Transport trainer = new MemTransportProvider().create(TransportConfig.of("trainer-0"));
    final Transport receiver = new MemTransportProvider().create(TransportConfig.of("inference-0"));
    final MemorySegment src = arena.allocate(SHARD_BYTES + 5, 64).asSlice(5, SHARD_BYTES);
    final MemorySegment dst = arena.allocate(SHARD_BYTES + 2, 64).asSlice(2, SHARD_BYTES);
    final List<ReadDescriptor> reads = new ArrayList<>();
    final Map<String, SourceInfo> sources;
    final ShardVerifier verifier;
    final ExecutorService workers = Executors.newFixedThreadPool(2);
    final Shard shard;

    /** The verification planned at the first refit and kept, as a receiver keeps it. */
    final LandingPlan plan = new LandingPlan();

    final CpuDigestProvider digests = new CpuDigestProvider();
    int[] whole;

    Rig(long flippedByte) {
      for (long i = 0; i < SHARD_BYTES; i++) {
        src.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 131 + (i >> 9)));
      }
      String published = ShardDigest.digest(src);
      if (flippedByte >= 0) {
        byte b = src.get(ValueLayout.JAVA_BYTE, flippedByte);
        src.set(ValueLayout.JAVA_BYTE, flippedByte, (byte) (b ^ 0x04));
      }
      trainer.register(src);
      receiver.register(dst);
      receiver.connect("trainer-0", trainer.localMetadata());
      for (int i = 0; i + 1 < CUTS.length; i++) {
        reads.add(
            new ReadDescriptor(
                "trainer-0",
                src.address() + CUTS[i],
                dst.address() + CUTS[i],
                CUTS[i + 1] - CUTS[i]));
      }
      shard =
          new Shard(
              new long[] {0}, Shape.of(SHARD_BYTES), "trainer-0", src.address(), 1, published);
      sources = Map.of("w", new SourceInfo(Shape.of(SHARD_BYTES), DType.U8, List.of(shard)));
      verifier =
          ShardVerifier.plan(
              VerifyMode.ALL,
              sources,
              List.of("w"),
              reads,
              (addr, n) -> dst.asSlice(addr - dst.address(), n),
              2);
    }

    /** Runs the wire with the verification work; returns the work per read, to inspect. */
    Map<ReadDescriptor, LandedWork> run(AtomicInteger verified) {
      if (whole == null) {
        whole = verifier.planLanding(digests, Set.of(), plan);
      }
      Map<String, List<Runnable>> bySession = verifier.wholeWork(digests, verified, whole);
      Map<ReadDescriptor, LandedWork> byRead = plan.renew(digests, verified);
      Descriptors d =
          new Descriptors(
              new WireGroups(reads, List.of(), List.of()), reads, reads.size(), SHARD_BYTES);
      PipelinedWire.run(
          new FusedWire(),
          receiver,
          d,
          bySession,
          byRead,
          workers,
          Duration.ofSeconds(30),
          true,
          8192,
          false);
      return byRead;
    }

    /** The publisher's digest of the source's bytes now, as a fresh discovery brings it. */
    void republish() {
      Shard now = shard.withDigests(ShardDigest.digest(src), null);
      verifier.refreshDigests(
          Map.of("w", new SourceInfo(Shape.of(SHARD_BYTES), DType.U8, List.of(now))));
    }

    @Override
    public void close() {
      workers.shutdownNow();
      verifier.close();
      receiver.close();
      trainer.close();
      arena.close();
    }
  }

  @Test
  void everyReadIsDigestedWhileCopiedAndTheShardVerifies() {
    try (Rig rig = new Rig(-1)) {
      AtomicInteger verified = new AtomicInteger();
      Map<ReadDescriptor, LandedWork> work = rig.run(verified);
      assertEquals(1, verified.get());
      assertEquals(rig.reads.size(), work.size());
      for (Map.Entry<ReadDescriptor, LandedWork> e : work.entrySet()) {
        assertTrue(e.getValue().folded(), "the mem transport folded " + e.getKey());
      }
      assertEquals(-1L, rig.src.mismatch(rig.dst), "every byte landed");
    }
  }

  @Test
  void oneFlippedBitAtTheStartInTheMiddleOrInTheTailIsAMismatch() {
    for (long at : new long[] {0, 4098, 8191, 3 * 4096 + 2001, SHARD_BYTES - 2, SHARD_BYTES - 1}) {
      try (Rig rig = new Rig(at)) {
        AtomicInteger verified = new AtomicInteger();
        DigestMismatchException e =
            assertThrows(DigestMismatchException.class, () -> rig.run(verified), "byte " + at);
        assertEquals("w", e.source());
        assertEquals("trainer-0", e.publisher());
        assertEquals(ShardDigest.digest(rig.src), e.actual(), "the digest of what landed, " + at);
        assertEquals(0, verified.get());
      }
    }
  }

  @Test
  void aPlanKeptAcrossRefitsChecksEachAgainstTheDigestPublishedForIt() {
    try (Rig rig = new Rig(-1)) {
      AtomicInteger first = new AtomicInteger();
      rig.run(first);
      assertEquals(1, first.get());
      assertEquals(1, rig.plan.regionCount());
      // The next step: new bytes, published with their digest; the same plan, renewed.
      for (long i = 0; i < SHARD_BYTES; i += 7) {
        rig.src.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 17 + 3));
      }
      rig.republish();
      AtomicInteger second = new AtomicInteger();
      Map<ReadDescriptor, LandedWork> work = rig.run(second);
      assertEquals(1, second.get(), "verified against the new digest, with a fresh accumulator");
      assertEquals(1, rig.plan.regionCount(), "the plan was kept, not rebuilt");
      for (Map.Entry<ReadDescriptor, LandedWork> e : work.entrySet()) {
        assertTrue(e.getValue().folded(), "folded again after its reset: " + e.getKey());
      }
      assertEquals(-1L, rig.src.mismatch(rig.dst), "every byte of the new step landed");
      // A bit flipped after the publisher digested it: the kept plan still catches it.
      byte b = rig.src.get(ValueLayout.JAVA_BYTE, 5000);
      rig.src.set(ValueLayout.JAVA_BYTE, 5000, (byte) (b ^ 0x01));
      AtomicInteger third = new AtomicInteger();
      DigestMismatchException e = assertThrows(DigestMismatchException.class, () -> rig.run(third));
      assertEquals(ShardDigest.digest(rig.src), e.actual());
      assertEquals(0, third.get());
    }
  }
}
