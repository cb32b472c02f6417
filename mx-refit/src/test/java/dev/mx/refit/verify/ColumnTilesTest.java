package dev.mx.refit.verify;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.Shape;
import dev.mx.api.digest.DigestParts;
import dev.mx.api.digest.TileDigests;
import dev.mx.digest.CpuDigestProvider;
import dev.mx.refit.publish.TileLayout;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Column tiles: the parts {@link TileDigests#forEachPart} cuts a shard into are exactly each tile's
 * region, and a tile assembled from them digests as the publisher's gathered tile does.
 */
class ColumnTilesTest {
  private static final CpuDigestProvider DIGESTS = new CpuDigestProvider();

  private record Part(int tile, long regionByte, long shardByte, long nbytes) {}

  private static List<Part> parts(TileDigests t, long from, long to) {
    List<Part> out = new ArrayList<>();
    t.forEachPart(from, to, (k, r, s, n) -> out.add(new Part(k, r, s, n)));
    return out;
  }

  private static MemorySegment random(Arena arena, long n, long seed) {
    MemorySegment m = arena.allocate(Math.max(1, n), 64).asSlice(0, n);
    Random r = new Random(seed);
    for (long i = 0; i < n; i++) {
      m.set(ValueLayout.JAVA_BYTE, i, (byte) r.nextInt());
    }
    return m;
  }

  @Test
  void partsCoverEveryTileRegionOnceInShardOrderAndAssembleToThePublishedDigests() {
    try (Arena arena = Arena.ofConfined()) {
      int cases = 0;
      for (long rows : new long[] {1, 3, 7, 16, 33}) {
        for (long columnBytes : new long[] {4, 12, 64, 4100}) {
          for (long blocks : new long[] {1, 2, 4}) {
            for (long tileBytes : new long[] {1, 24, 256, 9000}) {
              long rowBytes = columnBytes * blocks;
              long size = rows * rowBytes;
              MemorySegment bytes = random(arena, size, rows * 31 + columnBytes + blocks);
              TileDigests t =
                  TileDigests.ofColumns(DIGESTS, bytes, tileBytes, rowBytes, columnBytes);
              String what = rows + "x" + rowBytes + " cb " + columnBytes + " tile " + tileBytes;
              assertTrue(t.fits(size), what);
              List<Part> all = parts(t, 0, size);
              // In shard order, back to back.
              long at = 0;
              for (Part p : all) {
                assertEquals(at, p.shardByte(), what);
                assertTrue(p.nbytes() > 0, what);
                at += p.nbytes();
              }
              assertEquals(size, at, what);
              // Each tile's region covered exactly once.
              BitSet[] held = new BitSet[t.digests().size()];
              DigestParts[] assembled = new DigestParts[held.length];
              for (int k = 0; k < held.length; k++) {
                held[k] = new BitSet();
                assembled[k] = DIGESTS.parts(t.regionBytes(k, size)).orElseThrow();
              }
              for (Part p : all) {
                int from = (int) p.regionByte();
                int to = (int) (p.regionByte() + p.nbytes());
                assertTrue(held[p.tile()].get(from, to).isEmpty(), what + " overlap in " + p);
                held[p.tile()].set(from, to);
                assembled[p.tile()].add(p.regionByte(), bytes.asSlice(p.shardByte(), p.nbytes()));
              }
              long total = 0;
              for (int k = 0; k < held.length; k++) {
                long n = t.regionBytes(k, size);
                total += n;
                assertEquals(n, held[k].cardinality(), what + " tile " + k);
                assertEquals(t.digest(k), assembled[k].digest(), what + " tile " + k);
              }
              assertEquals(size, total, what);
              cases++;
            }
          }
        }
      }
      assertEquals(5 * 4 * 3 * 4, cases);
    }
  }

  @Test
  void anyRangeIsCutAsTheWholeShardIs() {
    TileDigests t = new TileDigests(64, 48, 12, List.of());
    long size = 10 * 48;
    List<Part> whole = parts(t, 0, size);
    Random r = new Random(7);
    for (int i = 0; i < 500; i++) {
      long a = r.nextInt((int) size);
      long b = a + 1 + r.nextInt((int) (size - a));
      long covered = 0;
      for (Part p : parts(t, a, b)) {
        // Every part lies inside the part of the whole cut that holds its first byte.
        Part w = null;
        for (Part x : whole) {
          if (x.shardByte() <= p.shardByte() && p.shardByte() < x.shardByte() + x.nbytes()) {
            w = x;
          }
        }
        assertEquals(w.tile(), p.tile(), p.toString());
        assertEquals(w.regionByte() + (p.shardByte() - w.shardByte()), p.regionByte());
        assertTrue(p.shardByte() + p.nbytes() <= w.shardByte() + w.nbytes(), p.toString());
        covered += p.nbytes();
      }
      assertEquals(b - a, covered);
    }
  }

  @Test
  void byteTilesAreCutAtTileEdges() {
    TileDigests t = new TileDigests(10, List.of());
    assertEquals(
        List.of(new Part(0, 7, 7, 3), new Part(1, 0, 10, 10), new Part(2, 0, 20, 5)),
        parts(t, 7, 25));
    assertEquals("tile 2 (shard bytes [20, 25))", t.describe(2, 25));
    assertEquals(5, t.regionBytes(2, 25));
  }

  @Test
  void aColumnTileDescribesItsRowsAndColumnBytes() {
    TileDigests t = new TileDigests(64, 48, 12, List.of());
    // 4 column blocks per row, 5 rows per tile: tile 6 is block 2 of rows [5, 10).
    assertEquals("tile 6 (rows [5, 10) of 48 bytes, row bytes [24, 36))", t.describe(6, 11 * 48));
    assertEquals(12, t.countFor(11 * 48));
    assertEquals(12, t.regionBytes(10, 11 * 48)); // the last group: one row
    assertEquals(-1, t.countFor(11 * 48 + 1));
    assertThrows(IllegalStateException.class, () -> t.start(0));
    assertThrows(IllegalArgumentException.class, () -> new TileDigests(64, 50, 12, List.of()));
    assertThrows(IllegalArgumentException.class, () -> new TileDigests(64, 0, 12, List.of()));
  }

  @Test
  void publishersListColumnTilesOnlyForShardsSplitAlongTheirLastDimension() {
    TileLayout layout = new TileLayout(256, 4);
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment bytes = random(arena, 64 * 64 * 2, 1);
      // o_proj at TP 2: columns split.
      TileDigests split = layout.digest(DIGESTS, bytes, Shape.of(64, 64), Shape.of(64, 128), 2);
      assertTrue(split.byColumns());
      assertEquals(128, split.rowBytes());
      assertEquals(32, split.columnBytes());
      // q_proj at TP 2: rows split, whole rows held: byte tiles.
      TileDigests rows = layout.digest(DIGESTS, bytes, Shape.of(64, 64), Shape.of(128, 64), 2);
      assertFalse(rows.byColumns());
      assertEquals(TileDigests.of(DIGESTS, bytes, 256), rows);
      // Columns that 4 does not divide: the common divisor (6 columns, 2 blocks of 3).
      MemorySegment six = bytes.asSlice(0, 600 * 6 * 2);
      TileDigests two = layout.digest(DIGESTS, six, Shape.of(600, 6), Shape.of(600, 12), 2);
      assertEquals(6, two.columnBytes());
      // Odd columns: byte tiles; one tile or less: none; tiles off: none.
      MemorySegment odd = bytes.asSlice(0, 200 * 7 * 2);
      assertFalse(layout.digest(DIGESTS, odd, Shape.of(200, 7), Shape.of(200, 14), 2).byColumns());
      assertNull(
          layout.digest(DIGESTS, bytes.asSlice(0, 256), Shape.of(2, 64), Shape.of(2, 128), 2));
      assertNull(
          new TileLayout(0, 4).digest(DIGESTS, bytes, Shape.of(64, 64), Shape.of(64, 128), 2));
      assertFalse(
          new TileLayout(256, 1)
              .digest(DIGESTS, bytes, Shape.of(64, 64), Shape.of(64, 128), 2)
              .byColumns());
    }
    assertThrows(IllegalArgumentException.class, () -> new TileLayout(256, 0));
    assertThrows(IllegalArgumentException.class, () -> new TileLayout(-1, 4));
  }
}
