package dev.mx.metadata;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mx.api.Shape;
import dev.mx.api.metadata.PublishedShard;
import dev.mx.api.metadata.ReplicaShard;
import dev.mx.api.metadata.ShardTable;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The compact {@code replica_shards} list: what it holds, how it reads back, what it refuses. */
class ShardTableReplicaCodecTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private final ShardTableCodec codec = ShardTableCodec.standard();

  /** TestTables' table of {@code agent} with two replicas: one changed at step 5, one unchecked. */
  private static ShardTable withReplicas(String agent) {
    ShardTable t = TestTables.table(agent, 2, 7L, true);
    List<ReplicaShard> replicas =
        List.of(
            new ReplicaShard(
                "model.embed_tokens.weight",
                new PublishedShard(
                    agent,
                    1,
                    0x7f00_0000_1000L,
                    new long[] {0, 16},
                    Shape.of(32, 16),
                    "0123456789abcdef0123456789abcdef",
                    null,
                    5L)),
            new ReplicaShard(
                "lm_head.weight",
                new PublishedShard(
                    agent, 0, -4096L, new long[] {8, 0}, Shape.of(8, 64), null, null, null)));
    return listing(t, replicas);
  }

  /** {@code t} listing {@code replicas}. */
  private static ShardTable listing(ShardTable t, List<ReplicaShard> replicas) {
    return new ShardTable(
        t.agentName(),
        t.metadataEndpoint(),
        t.agentMetadata(),
        t.tensors(),
        t.publisherStep(),
        t.topology(),
        replicas);
  }

  @Test
  void replicasRoundTripWithTheTablesAgentAndCountAsEntries() {
    ShardTable t = withReplicas("trainer-3");
    ShardTable back = codec.decode(codec.encode(t));
    assertEquals(t.tensors(), back.tensors());
    assertEquals(t.replicas(), back.replicas());
    assertEquals("trainer-3", back.replicas().get(1).shard().agentName());
    assertEquals(-4096L, back.replicas().get(1).shard().addr(), "all 64 bits of the address");
    assertEquals(4, back.entryCount());
    assertEquals(4, codec.decodeHeader(codec.encode(t)).entryCount());
  }

  @Test
  void replicasAreOneCompactArrayEachUnderTheLastKey() throws IOException {
    JsonNode root = JSON.readTree(codec.encode(withReplicas("a")));
    List<String> keys = new ArrayList<>();
    root.fieldNames().forEachRemaining(keys::add);
    assertEquals(ShardTableCodec.REPLICA_SHARDS, keys.get(keys.size() - 1));
    assertEquals(
        JSON.readTree(
            "[[\"model.embed_tokens.weight\", 1, "
                + 0x7f00_0000_1000L
                + ", [0, 16], [32, 16], \"0123456789abcdef0123456789abcdef\", 5],"
                + " [\"lm_head.weight\", 0, 18446744073709547520, [8, 0], [8, 64], null]]"),
        root.get(ShardTableCodec.REPLICA_SHARDS));
  }

  @Test
  void aTableWithoutReplicasIsEncodedAsBefore() {
    ShardTable t = TestTables.table("a", 3, 2L, true);
    byte[] plain = codec.encode(t);
    byte[] viaFullConstructor = codec.encode(listing(t, List.of()));
    assertArrayEquals(plain, viaFullConstructor);
    assertFalse(new String(plain, java.nio.charset.StandardCharsets.UTF_8).contains("replica"));
  }

  @Test
  void encodeRefusesAReplicaOfAnotherAgentOrWithTileDigests() {
    ShardTable t = withReplicas("a");
    ReplicaShard foreign =
        new ReplicaShard(
            "w", new PublishedShard("b", 0, 8, new long[] {0}, Shape.of(4), null, null, null));
    ShardTableFormatException e =
        assertThrows(
            ShardTableFormatException.class,
            () ->
                codec.encode(
                    new ShardTable("a", "", new byte[0], t.tensors(), 1L, null, List.of(foreign))));
    assertEquals("replica_shards[0]", e.path());
    assertTrue(e.getMessage().contains("held by agent 'b'"), e.getMessage());
    ReplicaShard tiled =
        new ReplicaShard(
            "w",
            new PublishedShard(
                "a",
                0,
                8,
                new long[] {0},
                Shape.of(4),
                "0123456789abcdef0123456789abcdef",
                new dev.mx.api.digest.TileDigests(4, List.of("0123456789abcdef0123456789abcdef")),
                null));
    e =
        assertThrows(
            ShardTableFormatException.class,
            () ->
                codec.encode(
                    new ShardTable("a", "", new byte[0], t.tensors(), 1L, null, List.of(tiled))));
    assertTrue(e.getMessage().contains("a replica carries no tile digests"), e.getMessage());
  }
}
