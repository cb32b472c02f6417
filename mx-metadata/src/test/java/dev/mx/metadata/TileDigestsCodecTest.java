package dev.mx.metadata;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.digest.TileDigests;
import dev.mx.api.metadata.PublishedShard;
import dev.mx.api.metadata.PublishedTensor;
import dev.mx.api.metadata.ShardTable;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The optional per-shard {@code tile_digests} key: round trip, placement, and validation. */
class TileDigestsCodecTest {
  private final ShardTableCodec codec = ShardTableCodec.standard();

  /**
   * Each 8x4 bf16 shard (64 bytes) of the test table with digests over tiles of {@code tileBytes}.
   */
  private static ShardTable withTiles(ShardTable t, long tileBytes, int count) {
    return withTiles(t, new TileDigests(tileBytes, List.of()), count);
  }

  /** Each shard of the test table with {@code count} digests over the tiling of {@code tiling}. */
  private static ShardTable withTiles(ShardTable t, TileDigests tiling, int count) {
    List<PublishedTensor> tensors = new ArrayList<>();
    for (PublishedTensor x : t.tensors()) {
      List<PublishedShard> shards = new ArrayList<>();
      for (PublishedShard s : x.shards()) {
        List<String> d = new ArrayList<>();
        for (int k = 0; k < count; k++) {
          d.add(String.format("%032x", s.addr() + k));
        }
        shards.add(
            new PublishedShard(
                s.agentName(),
                s.deviceId(),
                s.addr(),
                s.shardOffset(),
                s.shape(),
                s.digest(),
                tiling.withDigests(d)));
      }
      tensors.add(new PublishedTensor(x.name(), x.dtype(), x.elsize(), x.fullShape(), shards));
    }
    return new ShardTable(
        t.agentName(), t.metadataEndpoint(), t.agentMetadata(), tensors, t.publisherStep());
  }

  private static String text(byte[] b) {
    return new String(b, StandardCharsets.UTF_8);
  }

  @Test
  void tileDigestsRoundTripIncludingAShortLastTile() {
    ShardTable t = withTiles(TestTables.table("t", 2, 7L, true), 24, 3); // 64 bytes: 24 + 24 + 16
    ShardTable back = codec.decode(codec.encode(t));
    assertEquals(t.tensors(), back.tensors());
    PublishedShard s = back.tensors().get(1).shards().get(1);
    assertEquals(24, s.tiles().tileBytes());
    assertEquals(
        List.of(
            String.format("%032x", s.addr()),
            String.format("%032x", s.addr() + 1),
            String.format("%032x", s.addr() + 2)),
        s.tiles().digests());
  }

  @Test
  void tablesWithoutTheKeyKeepTheirBytesAndTheKeyComesLast() {
    for (boolean digests : new boolean[] {false, true}) {
      ShardTable bare = TestTables.table("t", 2, 3L, digests);
      String plain = text(codec.encode(bare));
      assertFalse(plain.contains("tile_digests"), plain);
      String tiled = text(codec.encode(withTiles(bare, 16, 4)));
      // Removing the key restores the table byte for byte: nothing else moved.
      String stripped =
          tiled.replaceAll(
              ",\"tile_digests\":\\{\"tile_bytes\":16,\"digests\":\\[[^\\]]*\\]\\}", "");
      assertEquals(plain, stripped);
      assertTrue(
          tiled.contains(
              (digests ? "\"" : "]") + ",\"tile_digests\":{\"tile_bytes\":16,\"digests\":[\""),
          "written after the shard's existing keys: " + tiled);
      for (PublishedTensor x : codec.decode(plain.getBytes(StandardCharsets.UTF_8)).tensors()) {
        x.shards().forEach(s -> assertNull(s.tiles(), "absent key reads as no tile digests"));
      }
    }
  }

  @Test
  void aWrongTileCountOrMalformedDigestIsRejectedWithItsPath() {
    // Encoding refuses a wrong count too, so drop a digest from a correct encoding.
    assertThrows(
        ShardTableFormatException.class,
        () -> codec.encode(withTiles(TestTables.table("t", 1, null, true), 16, 3)));
    byte[] short1 =
        text(codec.encode(withTiles(TestTables.table("t", 1, null, true), 16, 4)))
            .replaceFirst(",\"[0-9a-f]{32}\"\\]", "]")
            .getBytes(StandardCharsets.UTF_8);
    ShardTableFormatException e =
        assertThrows(ShardTableFormatException.class, () -> codec.decode(short1));
    assertEquals("tensors[0].shards[0].tile_digests.digests", e.path());
    assertTrue(
        e.getMessage().contains("3 tile digests") && e.getMessage().contains("make 4"),
        e.getMessage());

    String bad =
        text(codec.encode(withTiles(TestTables.table("t", 1, null, true), 32, 2)))
            .replaceFirst("\"digests\":\\[\"[0-9a-f]{32}\"", "\"digests\":[\"XYZ\"");
    e =
        assertThrows(
            ShardTableFormatException.class,
            () -> codec.decode(bad.getBytes(StandardCharsets.UTF_8)));
    assertEquals("tensors[0].shards[0].tile_digests.digests[0]", e.path());

    String zero =
        text(codec.encode(withTiles(TestTables.table("t", 1, null, true), 32, 2)))
            .replaceFirst("\"tile_bytes\":32", "\"tile_bytes\":0");
    e =
        assertThrows(
            ShardTableFormatException.class,
            () -> codec.decode(zero.getBytes(StandardCharsets.UTF_8)));
    assertTrue(e.path().endsWith("tile_digests.tile_bytes"), e.path());
  }

  @Test
  void columnTilesRoundTripUnderAKeyOfTheirOwnThatOlderReadersSkip() {
    // 8x4 bf16 shards: rows of 8 bytes in 2 column blocks of 4; tiles of 16 bytes are 4 rows of
    // one block: 2 row groups x 2 blocks.
    TileDigests columns = new TileDigests(16, 8, 4, List.of());
    ShardTable t = withTiles(TestTables.table("t", 2, 7L, true), columns, 4);
    String json = text(codec.encode(t));
    assertTrue(
        json.contains(
            ",\"column_tile_digests\":{\"tile_bytes\":16,\"row_bytes\":8,\"column_bytes\":4,"
                + "\"digests\":[\""),
        json);
    assertFalse(json.contains("\"tile_digests\""), json);
    ShardTable back = codec.decode(json.getBytes(StandardCharsets.UTF_8));
    assertEquals(t.tensors(), back.tensors());
    TileDigests read = back.tensors().get(1).shards().get(1).tiles();
    assertTrue(read.byColumns());
    assertEquals(8, read.rowBytes());
    assertEquals(4, read.columnBytes());
    // A reader that knows only byte tiles skips the key: the shard reads as untiled, never as
    // byte tiles of 16.
    String renamed = json.replace("\"column_tile_digests\"", "\"some_later_key\"");
    for (PublishedTensor x : codec.decode(renamed.getBytes(StandardCharsets.UTF_8)).tensors()) {
      x.shards().forEach(s -> assertNull(s.tiles(), "unknown key skipped"));
    }
  }

  /** The decoder's error for {@code json} with its first {@code regex} match replaced. */
  private ShardTableFormatException rejected(String json, String regex, String replacement) {
    byte[] bad = json.replaceFirst(regex, replacement).getBytes(StandardCharsets.UTF_8);
    return assertThrows(ShardTableFormatException.class, () -> codec.decode(bad));
  }

  @Test
  void columnTilesThatDoNotFitTheShardAreRejectedWithTheirPath() {
    TileDigests columns = new TileDigests(16, 8, 4, List.of());
    String json = text(codec.encode(withTiles(TestTables.table("t", 1, null, true), columns, 4)));
    String at = "tensors[0].shards[0].column_tile_digests.";
    ShardTableFormatException e = rejected(json, ",\"[0-9a-f]{32}\"\\]", "]");
    assertEquals(at + "digests", e.path());
    assertTrue(
        e.getMessage().contains("3 tile digests")
            && e.getMessage().contains("column tiles (rows of 8 bytes, column blocks of 4")
            && e.getMessage().contains("make 4"),
        e.getMessage());
    // Rows of 24 bytes do not divide a 64-byte shard.
    e = rejected(json, "\"row_bytes\":8", "\"row_bytes\":24");
    assertEquals(at + "row_bytes", e.path());
    assertTrue(e.getMessage().contains("not whole rows of 24 bytes"), e.getMessage());
    // A column block that does not divide the row.
    e = rejected(json, "\"column_bytes\":4", "\"column_bytes\":3");
    assertEquals(at + "column_bytes", e.path());
    // row_bytes missing.
    e = rejected(json, "\"row_bytes\":8,", "");
    assertTrue(e.getMessage().contains("row_bytes"), e.getMessage());
  }
}
