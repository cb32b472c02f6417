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

/**
 * The optional per-shard {@code changed_step} key of delta refits: written last, so tables without
 * it keep every byte; round trip; null reads as absent; a negative step is refused.
 */
class ChangedStepCodecTest {
  private final ShardTableCodec codec = ShardTableCodec.standard();

  /**
   * The test table, each shard also with tile digests and claiming it last changed at {@code s}.
   */
  private static ShardTable claiming(ShardTable t, Long s) {
    List<PublishedTensor> tensors = new ArrayList<>();
    for (PublishedTensor x : t.tensors()) {
      List<PublishedShard> shards = new ArrayList<>();
      for (PublishedShard p : x.shards()) {
        shards.add(
            new PublishedShard(
                p.agentName(),
                p.deviceId(),
                p.addr(),
                p.shardOffset(),
                p.shape(),
                p.digest(),
                new TileDigests(32, List.of("0".repeat(32), "f".repeat(32))),
                s));
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
  void theKeyRoundTripsAndComesLastInEachShard() {
    ShardTable t = claiming(TestTables.table("t", 2, 9L, true), 4L);
    ShardTable back = codec.decode(codec.encode(t));
    assertEquals(t.tensors(), back.tensors());
    assertEquals(4L, back.tensors().get(1).shards().get(0).changedStep());
    String json = text(codec.encode(t));
    // After the tile digests, closing the shard object.
    assertTrue(json.contains("ffffffff\"]},\"changed_step\":4}"), json);
  }

  @Test
  void tablesWithoutTheKeyKeepTheirBytes() {
    ShardTable bare = claiming(TestTables.table("t", 2, 3L, true), null);
    String plain = text(codec.encode(bare));
    assertFalse(plain.contains("changed_step"), plain);
    String claimed = text(codec.encode(claiming(TestTables.table("t", 2, 3L, true), 2L)));
    assertEquals(plain, claimed.replace(",\"changed_step\":2", ""));
    assertNull(
        codec
            .decode(plain.getBytes(StandardCharsets.UTF_8))
            .tensors()
            .get(0)
            .shards()
            .get(0)
            .changedStep());
  }

  @Test
  void nullReadsAsAbsentAndANegativeStepIsRefusedNamingThePath() {
    String claimed = text(codec.encode(claiming(TestTables.table("t", 1, 3L, true), 2L)));
    ShardTable nulled =
        codec.decode(
            claimed
                .replace("\"changed_step\":2", "\"changed_step\":null")
                .getBytes(StandardCharsets.UTF_8));
    assertNull(nulled.tensors().get(0).shards().get(0).changedStep());
    ShardTableFormatException e =
        assertThrows(
            ShardTableFormatException.class,
            () ->
                codec.decode(
                    claimed
                        .replace("\"changed_step\":2", "\"changed_step\":-1")
                        .getBytes(StandardCharsets.UTF_8)));
    assertTrue(e.getMessage().contains("changed_step"), e.getMessage());
  }
}
