package dev.mx.refit.verify;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.digest.TileDigests;
import dev.mx.api.error.DigestMismatchException;
import dev.mx.api.plan.PullSegment;
import dev.mx.api.plan.Shard;
import dev.mx.api.plan.SourceInfo;
import dev.mx.api.plan.TransferPlan;
import dev.mx.digest.CpuDigestProvider;
import dev.mx.digest.ShardDigest;
import dev.mx.refit.DiscoveredSources;
import dev.mx.refit.Receiver;
import dev.mx.refit.ReceiverTestAccess;
import dev.mx.refit.SourceDiscovery;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The default mode verifies a shard read in part tile by tile: tiles the reads hold whole where
 * they land, the partly held boundary tile staged whole — instead of staging the whole shard.
 */
class TileVerificationTest {
  private static final long TILE = 16; // one row of the 4x4 f32 "strided" source

  /** The seed's sources, "strided" published with digests over tiles of one row. */
  private static Map<String, SourceInfo> tiled(ReceiverTestAccess.Handle h) {
    Map<String, SourceInfo> out = new LinkedHashMap<>(ReceiverTestAccess.digests(h));
    SourceInfo s = out.get("strided");
    Shard sh = s.shards().get(0);
    TileDigests tiles =
        TileDigests.of(new CpuDigestProvider(), ReceiverTestAccess.source(h, "strided"), TILE);
    out.put(
        "strided",
        new SourceInfo(s.globalShape(), s.dtype(), List.of(sh.withDigests(sh.digest(), tiles))));
    return out;
  }

  /**
   * The seed plan with "strided" (4x2 f32 destination) read exactly from source bytes [8, 40): half
   * of row 0, row 1, half of row 2.
   */
  private static TransferPlan partial(ReceiverTestAccess.Handle h) {
    long strided = ReceiverTestAccess.source(h, "strided").address();
    TransferPlan seed = ReceiverTestAccess.seedPlan(h);
    List<PullSegment> segments = new ArrayList<>(seed.segments());
    segments.add(new PullSegment("s1", strided + 8, "strided", 0, 32));
    return new TransferPlan(
        segments, List.of(), seed.converts(), List.of(), List.of(), 2, 32, Map.of());
  }

  /** What the same plan pulls without verification (nothing staged). */
  private static long unverifiedBytesReceived(
      ReceiverTestAccess.Handle h, Map<String, SourceInfo> sources, TransferPlan plan) {
    try (Receiver r =
        ReceiverTestAccess.builder(h)
            .config(dev.mx.refit.ReceiverConfig.defaults().withVerify(dev.mx.refit.VerifyMode.OFF))
            .planner((c, s, m) -> plan)
            .discovery(
                SourceDiscovery.fixed(new DiscoveredSources(sources, ReceiverTestAccess.peers(h))))
            .build()) {
      return (Long) r.updateWeights(0).get("bytes_received");
    }
  }

  @Test
  void tileDigestsAreShardDigestsOfTheTileBytes() {
    try (var h = ReceiverTestAccess.harness()) {
      MemorySegment src = ReceiverTestAccess.source(h, "strided");
      TileDigests t = TileDigests.of(new CpuDigestProvider(), src, 24); // 64 bytes: 24 + 24 + 16
      assertEquals(3, t.digests().size());
      assertEquals(ShardDigest.digest(src.asSlice(0, 24)), t.digest(0));
      assertEquals(ShardDigest.digest(src.asSlice(24, 24)), t.digest(1));
      assertEquals(ShardDigest.digest(src.asSlice(48, 16)), t.digest(2));
      assertTrue(t.fits(64) && !t.fits(73));
    }
  }

  @Test
  void aShardReadInPartIsVerifiedByTilePullingOnlyTheBoundaryTile() {
    try (var h = ReceiverTestAccess.harness()) {
      Map<String, SourceInfo> sources = tiled(h);
      TransferPlan plan = partial(h);
      try (Receiver r =
          ReceiverTestAccess.builder(h)
              .planner((c, s, m) -> plan)
              .discovery(
                  SourceDiscovery.fixed(
                      new DiscoveredSources(sources, ReceiverTestAccess.peers(h))))
              .build()) {
        Map<String, Object> m = r.updateWeights(1);
        assertEquals(0L, m.get("unverifiable_shards"), m.toString());
        assertEquals(0L, m.get("unverified_bytes"));
        // Row 1 stays on the wire, verified where it landed; only the boundary tiles 0 and 2 are
        // staged:
        // 32 bytes pulled for the 16 the plan needs from them, instead of the whole 64-byte shard.
        assertEquals(2L, m.get("staged_shards"), m.toString());
        assertEquals(
            unverifiedBytesReceived(h, sources, plan) + 16, m.get("bytes_received"), m.toString());
        assertArrayEquals(
            new float[] {102, 103, 104, 105, 106, 107, 108, 109},
            ReceiverTestAccess.floats(h, "strided"));
        assertEquals(
            2, ReceiverTestAccess.installs(h), "the unverified baseline refit and this one");
      }
    }
  }

  @Test
  void aCorruptedByteInAWholeHeldTileOrInTheBoundaryTileFailsNamingShardAndTile() {
    // Byte 20 sits in tile 1 (held whole, verified where it landed); bytes 3 and 34 in tiles 0 and
    // 2 (staged),
    // byte 3 outside what the plan needs.
    for (long victim : new long[] {20, 34, 3}) {
      try (var h = ReceiverTestAccess.harness()) {
        Map<String, SourceInfo> sources = tiled(h);
        MemorySegment src = ReceiverTestAccess.source(h, "strided");
        src.set(
            ValueLayout.JAVA_BYTE, victim, (byte) (src.get(ValueLayout.JAVA_BYTE, victim) ^ 0x10));
        TransferPlan plan = partial(h);
        try (Receiver r =
            ReceiverTestAccess.builder(h)
                .planner((c, s, m) -> plan)
                .discovery(
                    SourceDiscovery.fixed(
                        new DiscoveredSources(sources, ReceiverTestAccess.peers(h))))
                .build()) {
          DigestMismatchException e =
              assertThrows(DigestMismatchException.class, () -> r.updateWeights(1));
          int tile = (int) (victim / TILE);
          assertEquals("strided", e.source());
          assertEquals(sources.get("strided").shards().get(0).tiles().digest(tile), e.expected());
          assertEquals(ShardDigest.digest(src.asSlice(tile * TILE, TILE)), e.actual());
          assertTrue(
              e.getMessage()
                  .contains(
                      "tile "
                          + tile
                          + " (shard bytes ["
                          + tile * TILE
                          + ", "
                          + (tile + 1) * TILE
                          + "))"),
              e.getMessage());
          assertEquals(0, ReceiverTestAccess.installs(h), "nothing installed after a mismatch");
        }
      }
    }
  }

  @Test
  void withoutTileDigestsThePartlyReadShardIsStagedWholeAsBefore() {
    try (var h = ReceiverTestAccess.harness()) {
      Map<String, SourceInfo> sources = ReceiverTestAccess.digests(h);
      TransferPlan plan = partial(h);
      try (Receiver r =
          ReceiverTestAccess.builder(h)
              .planner((c, s, m) -> plan)
              .discovery(
                  SourceDiscovery.fixed(
                      new DiscoveredSources(sources, ReceiverTestAccess.peers(h))))
              .build()) {
        Map<String, Object> m = r.updateWeights(1);
        assertEquals(0L, m.get("unverified_bytes"));
        assertEquals(1L, m.get("staged_shards"));
        // The whole 64-byte shard for the 32 bytes the plan needs of it.
        assertEquals(
            unverifiedBytesReceived(h, sources, plan) + 32, m.get("bytes_received"), m.toString());
      }
    }
  }
}
