package dev.mx.refit.verify;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.error.DigestMismatchException;
import dev.mx.api.error.UnverifiableShardException;
import dev.mx.api.plan.CaptureResult;
import dev.mx.api.plan.PullSegment;
import dev.mx.api.plan.RecordedCopy;
import dev.mx.api.plan.Shard;
import dev.mx.api.plan.SourceInfo;
import dev.mx.api.plan.TransferPlan;
import dev.mx.api.refit.Capture;
import dev.mx.api.refit.ParamSpec;
import dev.mx.digest.ShardDigest;
import dev.mx.refit.DiscoveredSources;
import dev.mx.refit.Receiver;
import dev.mx.refit.ReceiverConfig;
import dev.mx.refit.ReceiverTestAccess;
import dev.mx.refit.SourceDiscovery;
import dev.mx.refit.VerifyMode;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Digest verification before install, over the seed scenario and hand-built plans. */
class VerificationTest {

  private static ReceiverConfig verify(VerifyMode mode) {
    return ReceiverConfig.defaults().withVerify(mode);
  }

  @Test
  void wholeShardsVerifiesEveryShardTheRefitHoldsWhole() {
    try (var h = ReceiverTestAccess.harness()) {
      var sources = ReceiverTestAccess.digests(h);
      try (Receiver r =
          ReceiverTestAccess.builder(h)
              .discovery(
                  SourceDiscovery.fixed(
                      new DiscoveredSources(sources, ReceiverTestAccess.peers(h))))
              .build()) {
        Map<String, Object> m = r.updateWeights(1);
        // exact: one read of the whole shard into its receive buffer; strided: full pull; router:
        // convert staging.
        assertEquals(3L, m.get("verified_shards"));
        assertEquals(0L, m.get("unverifiable_shards"));
        assertTrue(m.containsKey("verify_s") || m.containsKey("pipeline_drain_s"), m.toString());
        assertEquals(1, ReceiverTestAccess.installs(h));
      }
    }
  }

  @Test
  void aTableWithoutDigestsFailsTheDefaultModeAndIsCountedUnverifiableWhenOptedOut() {
    try (var h = ReceiverTestAccess.harness()) {
      try (Receiver r =
          ReceiverTestAccess.builder(h)
              .discovery(SourceDiscovery.fixed(ReceiverTestAccess.withoutDigests(h)))
              .build()) {
        UnverifiableShardException e =
            assertThrows(UnverifiableShardException.class, () -> r.updateWeights(1));
        assertTrue(
            e.getMessage().contains("did not publish a verification digest"), e.getMessage());
        assertTrue(e.getMessage().contains("--verify whole-shards"), e.getMessage());
        assertEquals(0, ReceiverTestAccess.installs(h), "nothing installed");
      }
      try (Receiver r =
          ReceiverTestAccess.builder(h)
              .config(verify(VerifyMode.WHOLE_SHARDS))
              .discovery(SourceDiscovery.fixed(ReceiverTestAccess.withoutDigests(h)))
              .build()) {
        Map<String, Object> m = r.updateWeights(1);
        assertEquals(0L, m.get("verified_shards"));
        assertEquals(3L, m.get("unverifiable_shards"));
        assertEquals(
            8L * 4 + 16 * 4 + 4 * 2, m.get("unverified_bytes"), "every byte read went unverified");
      }
      try (Receiver r =
          ReceiverTestAccess.builder(h)
              .config(verify(VerifyMode.OFF))
              .discovery(SourceDiscovery.fixed(ReceiverTestAccess.withoutDigests(h)))
              .build()) {
        assertEquals(8L * 4 + 16 * 4 + 4 * 2, r.updateWeights(1).get("unverified_bytes"));
      }
    }
  }

  @Test
  void aCorruptedSourceByteIsAMismatchNamingTheShardAndNothingIsInstalled() {
    for (String victim : List.of("strided", "exact", "router")) {
      try (var h = ReceiverTestAccess.harness()) {
        var sources = ReceiverTestAccess.digests(h);
        MemorySegment src = ReceiverTestAccess.source(h, victim);
        src.set(ValueLayout.JAVA_BYTE, 5, (byte) (src.get(ValueLayout.JAVA_BYTE, 5) ^ 0x10));
        try (Receiver r =
            ReceiverTestAccess.builder(h)
                .discovery(
                    SourceDiscovery.fixed(
                        new DiscoveredSources(sources, ReceiverTestAccess.peers(h))))
                .build()) {
          DigestMismatchException e =
              assertThrows(DigestMismatchException.class, () -> r.updateWeights(1), victim);
          assertEquals(victim, e.source());
          assertArrayEquals(new long[sources.get(victim).globalShape().rank()], e.shardOffset());
          assertEquals(sources.get(victim).shards().get(0).session(), e.publisher());
          assertEquals(sources.get(victim).shards().get(0).digest(), e.expected());
          assertEquals(ShardDigest.digest(src), e.actual());
          assertTrue(
              e.getMessage().contains(victim) && e.getMessage().contains(e.publisher()),
              e.getMessage());
          assertEquals(0, ReceiverTestAccess.installs(h), "nothing installed after a mismatch");
        }
      }
    }
  }

  @Test
  void rediscoveryEachStepTakesThePublishersFreshDigests() {
    try (var h = ReceiverTestAccess.harness()) {
      var first = ReceiverTestAccess.digests(h);
      var current = new java.util.concurrent.atomic.AtomicReference<>(first);
      SourceDiscovery live =
          timeout -> new DiscoveredSources(current.get(), ReceiverTestAccess.peers(h));
      try (Receiver r =
              ReceiverTestAccess.builder(h).discovery(live).rediscoverEachStep(true).build();
          Receiver stale =
              ReceiverTestAccess.builder(h)
                  .discovery(
                      SourceDiscovery.fixed(
                          new DiscoveredSources(first, ReceiverTestAccess.peers(h))))
                  .build()) {
        assertEquals(3L, r.updateWeights(1).get("verified_shards"));
        assertEquals(3L, stale.updateWeights(1).get("verified_shards"));
        // The trainer writes the next step in place and republishes the digest of what it wrote.
        MemorySegment src = ReceiverTestAccess.source(h, "exact");
        src.set(ValueLayout.JAVA_FLOAT, 0, 42f);
        current.set(ReceiverTestAccess.digests(h));
        Map<String, Object> m = r.updateWeights(2);
        assertEquals(3L, m.get("verified_shards"));
        assertTrue(m.containsKey("rediscover_s"));
        assertEquals(42f, ReceiverTestAccess.floats(h, "exact")[0]);
        // A receiver that keeps the first table's digests rejects the new weights as a mismatch.
        DigestMismatchException e =
            assertThrows(DigestMismatchException.class, () -> stale.updateWeights(2));
        assertEquals("exact", e.source());
      }
    }
  }

  @Test
  void rediscoveryReplansWhenTheGeometryChanged() {
    var sources =
        Map.of(
            "w",
            new SourceInfo(
                Shape.of(4),
                DType.F32,
                List.of(new Shard(new long[] {0}, Shape.of(4), "a", 4096, 4, null))));
    var moved =
        Map.of(
            "w",
            new SourceInfo(
                Shape.of(4),
                DType.F32,
                List.of(new Shard(new long[] {0}, Shape.of(4), "a", 8192, 4, null))));
    assertTrue(
        ReceiverTestAccess.sameGeometry(
            sources,
            Map.of(
                "w",
                new SourceInfo(
                    Shape.of(4),
                    DType.F32,
                    List.of(
                        new Shard(
                            new long[] {0},
                            Shape.of(4),
                            "a",
                            4096,
                            4,
                            "00112233445566778899aabbccddeeff"))))),
        "digests alone do not change the geometry");
    assertFalse(ReceiverTestAccess.sameGeometry(sources, moved), "a moved buffer does");
    Shard a = new Shard(new long[] {0}, Shape.of(2), "a", 4096, 4, null);
    Shard b = new Shard(new long[] {2}, Shape.of(2), "b", 4096, 4, null);
    assertTrue(
        ReceiverTestAccess.sameGeometry(
            Map.of("w", new SourceInfo(Shape.of(4), DType.F32, List.of(a, b))),
            Map.of("w", new SourceInfo(Shape.of(4), DType.F32, List.of(b, a)))),
        "publishers listed in another order do not");
    assertFalse(ReceiverTestAccess.sameGeometry(sources, Map.of()), "a vanished source does");
  }

  @Test
  void aShardReadOnlyInPartIsUnverifiable() {
    try (var h = ReceiverTestAccess.harness()) {
      var sources = ReceiverTestAccess.digests(h);
      long strided = ReceiverTestAccess.source(h, "strided").address();
      // Read the first two columns of the 4x4 "strided" source exactly: four 8-byte runs, half of
      // the shard.
      List<PullSegment> segments = new ArrayList<>(ReceiverTestAccess.seedPlan(h).segments());
      for (int row = 0; row < 4; row++) {
        segments.add(new PullSegment("s1", strided + row * 16L, "strided", row * 8L, 8));
      }
      TransferPlan seed = ReceiverTestAccess.seedPlan(h);
      TransferPlan exactOnly =
          new TransferPlan(
              segments, List.of(), seed.converts(), List.of(), List.of(), 5, 64, Map.of());
      // The whole-shards opt-out installs the half it read unverified, and says how many bytes that
      // was.
      try (Receiver r =
          ReceiverTestAccess.builder(h)
              .config(verify(VerifyMode.WHOLE_SHARDS))
              .planner((c, s, m) -> exactOnly)
              .discovery(
                  SourceDiscovery.fixed(
                      new DiscoveredSources(sources, ReceiverTestAccess.peers(h))))
              .build()) {
        Map<String, Object> m = r.updateWeights(1);
        assertEquals(2L, m.get("verified_shards"));
        assertEquals(1L, m.get("unverifiable_shards"));
        assertEquals(32L, m.get("unverified_bytes"));
        assertArrayEquals(
            new float[] {100, 101, 104, 105, 108, 109, 112, 113},
            ReceiverTestAccess.floats(h, "strided"));
      }
      // The default stages the shard whole (one read instead of four), verifies it, then copies the
      // half.
      try (Receiver r =
          ReceiverTestAccess.builder(h)
              .planner((c, s, m) -> exactOnly)
              .discovery(
                  SourceDiscovery.fixed(
                      new DiscoveredSources(sources, ReceiverTestAccess.peers(h))))
              .build()) {
        Map<String, Object> m = r.updateWeights(1);
        assertEquals(3L, m.get("verified_shards"));
        assertEquals(0L, m.get("unverifiable_shards"));
        assertEquals(0L, m.get("unverified_bytes"));
        assertEquals(1L, m.get("staged_shards"));
        assertEquals(1L, m.get("sources_staged"));
        assertArrayEquals(
            new float[] {100, 101, 104, 105, 108, 109, 112, 113},
            ReceiverTestAccess.floats(h, "strided"));
      }
      // Strict refuses the same plan before reading anything.
      try (Receiver r =
          ReceiverTestAccess.builder(h)
              .config(verify(VerifyMode.STRICT))
              .strictPlanner((c, s, m) -> exactOnly)
              .discovery(
                  SourceDiscovery.fixed(
                      new DiscoveredSources(sources, ReceiverTestAccess.peers(h))))
              .build()) {
        UnverifiableShardException e =
            assertThrows(UnverifiableShardException.class, () -> r.updateWeights(2));
        assertEquals("strided", e.source());
        assertTrue(e.getMessage().contains("only part"), e.getMessage());
      }
    }
  }

  /**
   * Two publisher shards of a 4x2 source assembled side by side into a 2x4 parameter: each shard
   * lands strided.
   */
  @Test
  void wholeShardsAssembledIntoAStridedDestinationAreGatheredAndVerified() {
    try (var h = ReceiverTestAccess.harness()) {
      MemorySegment top = ReceiverTestAccess.tensor(h, "s3", DType.F32, 1, 2, 3, 4);
      MemorySegment bottom = ReceiverTestAccess.tensor(h, "s4", DType.F32, 5, 6, 7, 8);
      // Source "w" is 4x2 (rows 0-1 from s3, rows 2-3 from s4); the engine stores it
      // transposed-free as a
      // 2x4 parameter "p" by rows: row r of the source goes to p[r / 2, (r % 2) * 2 .. +2].
      SourceInfo w =
          new SourceInfo(
              Shape.of(4, 2),
              DType.F32,
              List.of(
                  new Shard(
                      new long[] {0, 0},
                      Shape.of(2, 2),
                      "s3",
                      top.address(),
                      4,
                      ShardDigest.digest(top)),
                  new Shard(
                      new long[] {2, 0},
                      Shape.of(2, 2),
                      "s4",
                      bottom.address(),
                      4,
                      ShardDigest.digest(bottom))));
      // Rows of each shard land 8 bytes apart in p but the shard's two rows are not adjacent there.
      List<PullSegment> segs =
          List.of(
              new PullSegment("s3", top.address(), "p", 0, 8),
              new PullSegment("s3", top.address() + 8, "p", 16, 8),
              new PullSegment("s4", bottom.address(), "p", 8, 8),
              new PullSegment("s4", bottom.address() + 8, "p", 24, 8));
      TransferPlan plan =
          new TransferPlan(segs, List.of(), List.of(), List.of(), List.of(), 4, 32, Map.of());
      RecordedCopy copy =
          RecordedCopy.contiguous("w", List.of(), "p", 0, Shape.of(4, 2), DType.F32);
      Capture capture =
          new Capture(
              CaptureResult.of(List.of(copy)),
              Map.of("p", new ParamSpec(Shape.of(2, 4), DType.F32)));
      try (Receiver r =
          ReceiverTestAccess.builder(h)
              .planner((c, s, m) -> plan)
              .geometry(m -> capture)
              .discovery(
                  SourceDiscovery.fixed(
                      new DiscoveredSources(Map.of("w", w), ReceiverTestAccess.peers(h))))
              .build()) {
        Map<String, Object> m = r.updateWeights(1);
        assertEquals(2L, m.get("verified_shards"));
        assertEquals(0L, m.get("unverifiable_shards"));
        assertArrayEquals(new float[] {1, 2, 5, 6, 3, 4, 7, 8}, ReceiverTestAccess.floats(h, "p"));
        top.setAtIndex(ValueLayout.JAVA_FLOAT, 3, 40f); // second row of the top shard
        DigestMismatchException e =
            assertThrows(DigestMismatchException.class, () -> r.updateWeights(2));
        assertEquals("s3", e.publisher());
        assertArrayEquals(new long[] {0, 0}, e.shardOffset());
      }
    }
  }

  @Test
  void strictVerifiesEverySourceAndRefusesAShardWithoutDigest() {
    try (var h = ReceiverTestAccess.harness()) {
      var sources = ReceiverTestAccess.digests(h);
      try (Receiver r =
          ReceiverTestAccess.builder(h)
              .config(verify(VerifyMode.STRICT))
              .strictPlanner((c, s, m) -> ReceiverTestAccess.seedPlan(h))
              .discovery(
                  SourceDiscovery.fixed(
                      new DiscoveredSources(sources, ReceiverTestAccess.peers(h))))
              .build()) {
        Map<String, Object> m = r.updateWeights(1);
        assertEquals(3L, m.get("verified_shards"));
        assertEquals(0L, m.get("unverifiable_shards"));
      }
      try (Receiver r =
          ReceiverTestAccess.builder(h)
              .config(verify(VerifyMode.STRICT))
              .strictPlanner((c, s, m) -> ReceiverTestAccess.seedPlan(h))
              .discovery(SourceDiscovery.fixed(ReceiverTestAccess.withoutDigests(h)))
              .build()) {
        UnverifiableShardException e =
            assertThrows(UnverifiableShardException.class, () -> r.updateWeights(1));
        assertTrue(
            e.getMessage().contains("did not publish a verification digest"), e.getMessage());
        assertEquals(1, ReceiverTestAccess.installs(h), "only the first receiver installed");
      }
    }
  }

  @Test
  void offSkipsVerification() {
    try (var h = ReceiverTestAccess.harness()) {
      var sources = ReceiverTestAccess.digests(h);
      ReceiverTestAccess.source(h, "exact").set(ValueLayout.JAVA_BYTE, 0, (byte) 1);
      try (Receiver r =
          ReceiverTestAccess.builder(h)
              .config(verify(VerifyMode.OFF))
              .discovery(
                  SourceDiscovery.fixed(
                      new DiscoveredSources(sources, ReceiverTestAccess.peers(h))))
              .build()) {
        Map<String, Object> m = r.updateWeights(1);
        assertFalse(m.containsKey("verify_s"));
        assertEquals(0L, m.get("verified_shards"));
      }
    }
  }
}
