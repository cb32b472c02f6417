package dev.mx.metadata;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mx.api.Shape;
import dev.mx.api.metadata.PublishedShard;
import dev.mx.api.metadata.PublishedTensor;
import dev.mx.api.metadata.ShardTable;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import org.junit.jupiter.api.Test;

class ShardTableCodecTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private final ShardTableCodec codec = ShardTableCodec.standard();

  private static List<String> keys(JsonNode object) {
    List<String> names = new ArrayList<>();
    object.fieldNames().forEachRemaining(names::add);
    return names;
  }

  private static String text(byte[] b) {
    return new String(b, StandardCharsets.UTF_8);
  }

  @Test
  void roundTripKeepsEveryFieldIncludingStepDigestsAndBinaryMetadata() {
    byte[] everyByte = new byte[256];
    for (int i = 0; i < 256; i++) {
      everyByte[i] = (byte) i;
    }
    ShardTable t = TestTables.table("trainer-ü-0", 5, 41L, true);
    t =
        new ShardTable(
            t.agentName(), t.metadataEndpoint(), everyByte, t.tensors(), t.publisherStep());
    ShardTable back = codec.decode(codec.encode(t));
    assertEquals(t.agentName(), back.agentName());
    assertEquals(t.metadataEndpoint(), back.metadataEndpoint());
    assertArrayEquals(everyByte, back.agentMetadata());
    assertEquals(41L, back.publisherStep());
    assertEquals(t.tensors(), back.tensors());
    assertEquals(5, back.entryCount());
  }

  @Test
  void roundTripWithoutOptionalKeysReadsAbsentAsNull() {
    ShardTable t = TestTables.table("t", 3, null, false);
    ShardTable back = codec.decode(codec.encode(t));
    assertNull(back.publisherStep());
    back.tensors()
        .forEach(
            x ->
                x.shards()
                    .forEach(s -> assertNull(s.digest(), "absent digest must read as unchecked")));
    assertEquals(t.tensors(), back.tensors());
  }

  @Test
  void stepZeroIsARealStep() throws IOException {
    byte[] json = codec.encode(TestTables.table("t", 1, 0L, false));
    assertEquals(0, JSON.readTree(json).get("publisher_step").asLong());
    assertEquals(0L, codec.decode(json).publisherStep());
  }

  @Test
  void keySetsAreExactlyThoseOfTheSpecInOrder() throws IOException {
    JsonNode full = JSON.readTree(codec.encode(TestTables.table("t", 2, 3L, true)));
    assertEquals(
        List.of(
            "schema",
            "agent_name",
            "metadata_endpoint",
            "agent_meta_b64",
            "tensors",
            "publisher_step"),
        keys(full));
    assertEquals(ShardTableCodec.TABLE_KEYS, keys(full));
    JsonNode tensor = full.get("tensors").get(0);
    assertEquals(List.of("name", "dtype", "elsize", "full_shape", "shards"), keys(tensor));
    assertEquals(
        List.of("agent_name", "device_id", "addr", "shard_offset", "shape", "digest"),
        keys(tensor.get("shards").get(0)));
    assertEquals("mx.reshard.shard_table.v1", full.get("schema").asText());
    assertEquals("torch.bfloat16", tensor.get("dtype").asText());

    JsonNode bare = JSON.readTree(codec.encode(TestTables.table("t", 2, null, false)));
    assertEquals(
        List.of("schema", "agent_name", "metadata_endpoint", "agent_meta_b64", "tensors"),
        keys(bare));
    assertEquals(
        List.of("agent_name", "device_id", "addr", "shard_offset", "shape"),
        keys(bare.get("tensors").get(0).get("shards").get(0)));
    assertFalse(
        text(codec.encode(TestTables.table("t", 2, null, false))).contains("null"),
        "optional keys are omitted, never null");
  }

  @Test
  void addingTheOptionalKeysLeavesEveryOtherByteAsItWas() {
    String bare = text(codec.encode(TestTables.table("t", 2, null, false)));
    String withStep = text(codec.encode(TestTables.table("t", 2, 12L, false)));
    assertEquals(bare.substring(0, bare.length() - 1) + ",\"publisher_step\":12}", withStep);

    String withDigests = text(codec.encode(TestTables.table("t", 2, null, true)));
    String stripped = withDigests.replaceAll(",\"digest\":\"[0-9a-f]{32}\"", "");
    assertEquals(bare, stripped);
    assertEquals(4, withDigests.split("\"digest\"").length - 1, "one digest per shard");
  }

  @Test
  void dtypeLabelsAreWrittenAsTorchNamesWhateverSpellingWasGiven() throws IOException {
    for (String label : new String[] {"bf16", "BF16", "bfloat16", "torch.bfloat16"}) {
      PublishedTensor t =
          new PublishedTensor(
              "w",
              label,
              2,
              Shape.of(2),
              List.of(new PublishedShard("a", 0, 64, new long[] {0}, Shape.of(2), null)));
      JsonNode n =
          JSON.readTree(codec.encode(new ShardTable("a", "", new byte[0], List.of(t), null)));
      assertEquals("torch.bfloat16", n.get("tensors").get(0).get("dtype").asText(), label);
    }
  }

  @Test
  void addressesUseAllSixtyFourBitsUnsigned() throws IOException {
    long high = 0xffff_8000_0000_1000L; // negative as a signed long
    PublishedTensor t =
        new PublishedTensor(
            "w",
            "torch.float32",
            4,
            Shape.of(1),
            List.of(new PublishedShard("a", 0, high, new long[] {0}, Shape.of(1), null)));
    byte[] json = codec.encode(new ShardTable("a", "", new byte[0], List.of(t), null));
    assertEquals(
        Long.toUnsignedString(high),
        JSON.readTree(json)
            .get("tensors")
            .get(0)
            .get("shards")
            .get(0)
            .get("addr")
            .bigIntegerValue()
            .toString());
    assertEquals(high, codec.decode(json).tensors().get(0).shards().get(0).addr());
  }

  @Test
  void oldTablesWithoutOptionalKeysDecode() throws IOException {
    ShardTable t;
    try (InputStream in = getClass().getResourceAsStream("old-table-v1.json")) {
      t = codec.decode(in);
    }
    assertEquals("trainer-0", t.agentName());
    assertEquals("10.0.0.5:5555", t.metadataEndpoint());
    assertArrayEquals(
        "nixl-agent-metadata\0\1\u00ff".getBytes(StandardCharsets.ISO_8859_1), t.agentMetadata());
    assertNull(t.publisherStep());
    assertEquals(2, t.entryCount());
    PublishedTensor down = t.tensors().get(1);
    assertEquals("model.layers.0.mlp.down_proj.weight", down.name());
    assertEquals("torch.float32", down.dtype());
    assertEquals(Shape.of(4, 6), down.fullShape());
    PublishedShard s = down.shards().get(0);
    assertEquals(1, s.deviceId());
    assertEquals(140230000004096L, s.addr());
    assertArrayEquals(new long[] {0, 3}, s.shardOffset());
    assertEquals(Shape.of(4, 3), s.shape());
    assertNull(s.digest());

    ShardTable empty;
    try (InputStream in = getClass().getResourceAsStream("old-table-v1-no-endpoint-empty.json")) {
      empty = codec.decode(in);
    }
    assertEquals("", empty.metadataEndpoint(), "an absent endpoint reads as empty");
    assertEquals(0, empty.entryCount());
  }

  @Test
  void unknownKeysAndNullOptionalsAreTolerated() {
    String json =
        """
        {"schema":"mx.reshard.shard_table.v1","agent_name":"a","agent_meta_b64":"","future":{"x":[1,2,{"y":null}]},
         "publisher_step":null,"tensors":[{"name":"w","dtype":"torch.float16","elsize":2,"full_shape":[2],
         "extra":true,"shards":[{"agent_name":"a","device_id":0,"addr":8,"shard_offset":[0],"shape":[2],
         "digest":null,"later":"x"}]}]}""";
    ShardTable t = codec.decode(json.getBytes(StandardCharsets.UTF_8));
    assertNull(t.publisherStep());
    assertNull(t.tensors().get(0).shards().get(0).digest());
    assertEquals(1, t.entryCount());
  }

  @Test
  void headerDecodeCountsEntriesAndMatchesTheFullDecode() {
    ShardTable t = TestTables.table("agent-h", 17, 9L, true);
    byte[] json = codec.encode(t);
    ShardTableHeader h = codec.decodeHeader(json);
    ShardTable full = codec.decode(json);
    assertEquals(
        new ShardTableHeader(
            full.agentName(),
            full.metadataEndpoint(),
            full.agentMetadata(),
            full.publisherStep(),
            full.entryCount()),
        h);
    assertEquals(17, h.entryCount());
    assertEquals(
        0, codec.decodeHeader(codec.encode(TestTables.table("e", 0, null, false))).entryCount());
  }

  @Test
  void encodeRefusesTablesItCouldNotDecode() {
    PublishedTensor badDtype =
        new PublishedTensor(
            "w",
            "torch.complex64",
            8,
            Shape.of(1),
            List.of(new PublishedShard("a", 0, 8, new long[] {0}, Shape.of(1), null)));
    ShardTableFormatException e =
        assertThrows(
            ShardTableFormatException.class,
            () -> codec.encode(new ShardTable("a", "", new byte[0], List.of(badDtype), null)));
    assertEquals("tensors[0].dtype", e.path());
    PublishedTensor outside =
        new PublishedTensor(
            "w",
            "torch.float32",
            4,
            Shape.of(4),
            List.of(
                new PublishedShard("a", 0, 8, new long[] {0}, Shape.of(4), null),
                new PublishedShard("a", 0, 8, new long[] {2}, Shape.of(4), null)));
    e =
        assertThrows(
            ShardTableFormatException.class,
            () -> codec.encode(new ShardTable("a", "", new byte[0], List.of(outside), null)));
    assertEquals("tensors[0].shards[1].shard_offset", e.path());
    assertThrows(
        ShardTableFormatException.class,
        () -> codec.encode(new ShardTable("a", "", new byte[0], List.of(), -1L)));
  }

  @Test
  void oversizedStreamIsRefusedAtTheLimitWithoutReadingItWhole() {
    long limit = 64 * 1024;
    ShardTableCodec small = new ShardTableCodec(ShardTableCodec.Limits.DEFAULT.withMaxBytes(limit));
    // An endless document: a valid prefix, then agent metadata that never ends.
    CountingEndlessStream endless =
        new CountingEndlessStream(
            "{\"schema\":\"mx.reshard.shard_table.v1\",\"agent_meta_b64\":\""
                .getBytes(StandardCharsets.UTF_8));
    ShardTableFormatException e =
        assertThrows(ShardTableFormatException.class, () -> small.decode(endless));
    assertTrue(e.getMessage().contains("exceeds the limit of " + limit), e.getMessage());
    assertTrue(
        endless.served <= limit + 1, "read " + endless.served + " bytes for a limit of " + limit);

    byte[] big = codec.encode(TestTables.table("a", 2000, null, true));
    ShardTableFormatException tooBig =
        assertThrows(ShardTableFormatException.class, () -> small.decode(big));
    assertEquals("$", tooBig.path());
    assertThrows(
        ShardTableFormatException.class, () -> small.decode(new ByteArrayInputStream(big)));
    assertEquals(
        2000, codec.decode(new ByteArrayInputStream(big)).entryCount(), "within the default limit");
  }

  @Test
  void entryAndShardAndRankLimitsAreEnforcedWithThePath() {
    byte[] json = codec.encode(TestTables.table("a", 5, null, false));
    ShardTableCodec fewTensors =
        new ShardTableCodec(ShardTableCodec.Limits.DEFAULT.withMaxTensors(4));
    assertEquals(
        "tensors",
        assertThrows(ShardTableFormatException.class, () -> fewTensors.decode(json)).path());
    assertEquals(
        "tensors",
        assertThrows(ShardTableFormatException.class, () -> fewTensors.decodeHeader(json)).path());
    ShardTableCodec oneShard =
        new ShardTableCodec(ShardTableCodec.Limits.DEFAULT.withMaxShardsPerTensor(1));
    assertEquals(
        "tensors[0].shards",
        assertThrows(ShardTableFormatException.class, () -> oneShard.decode(json)).path());
    ShardTableCodec rankOne = new ShardTableCodec(ShardTableCodec.Limits.DEFAULT.withMaxRank(1));
    assertEquals(
        "tensors[0].full_shape",
        assertThrows(ShardTableFormatException.class, () -> rankOne.decode(json)).path());
  }

  @Test
  void agentMetadataIsStandardBase64() throws IOException {
    byte[] meta = {(byte) 0xfb, (byte) 0xff, 0x00, 0x3e};
    JsonNode n = JSON.readTree(codec.encode(new ShardTable("a", "", meta, List.of(), null)));
    assertEquals(Base64.getEncoder().encodeToString(meta), n.get("agent_meta_b64").asText());
  }

  /** Serves a prefix, then 'A' forever, counting what it served. */
  private static final class CountingEndlessStream extends InputStream {
    private final byte[] prefix;
    long served;

    CountingEndlessStream(byte[] prefix) {
      this.prefix = prefix;
    }

    @Override
    public int read() {
      int b = served < prefix.length ? prefix[(int) served] : 'A';
      served++;
      return b;
    }

    @Override
    public int read(byte[] b, int off, int len) {
      for (int i = 0; i < len; i++) {
        b[off + i] = (byte) read();
      }
      return len;
    }
  }
}
