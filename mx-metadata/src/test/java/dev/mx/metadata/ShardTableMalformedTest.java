package dev.mx.metadata;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every malformed table is rejected with the JSON path of the field at fault and what is wrong with
 * it.
 */
class ShardTableMalformedTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** A valid table of four tensors with two shards each, edited by {@code edit}. */
  private static byte[] edited(Consumer<ObjectNode> edit) {
    try {
      ObjectNode root =
          (ObjectNode)
              JSON.readTree(ShardTableCodec.standard().encode(TestTables.table("a", 4, 3L, true)));
      edit.accept(root);
      return JSON.writeValueAsBytes(root);
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  private static ObjectNode tensor(ObjectNode root, int i) {
    return (ObjectNode) root.get("tensors").get(i);
  }

  private static ObjectNode shard(ObjectNode root, int i, int j) {
    return (ObjectNode) tensor(root, i).get("shards").get(j);
  }

  private static Arguments edit(String name, Consumer<ObjectNode> e, String path, String problem) {
    return Arguments.of(name, edited(e), path, problem);
  }

  private static Arguments raw(String name, String json, String path, String problem) {
    return Arguments.of(name, json.getBytes(StandardCharsets.UTF_8), path, problem);
  }

  static Stream<Arguments> cases() {
    return Stream.of(
        raw("not JSON", "shard table?", "$", "not valid JSON"),
        raw("empty input", "", "$", "expected an object, got the end of the input"),
        raw("array at the top", "[1, 2]", "$", "expected an object, got an array"),
        raw(
            "truncated",
            "{\"schema\":\"mx.reshard.shard_table.v1\",\"tensors\":[{\"name\":\"w\"",
            "tensors[0].name",
            "not valid JSON"),
        raw(
            "trailing content",
            "{\"schema\":\"mx.reshard.shard_table.v1\",\"agent_name\":\"a\","
                + "\"agent_meta_b64\":\"\",\"tensors\":[]} {}",
            "$",
            "unexpected content after the table object"),
        raw(
            "duplicate key",
                "{\"schema\":\"mx.reshard.shard_table.v1\",\"agent_name\":\"a\",\"agent_name\":\"b\"}",
            "agent_name", "Duplicate field"),
        edit(
            "wrong schema",
            r -> r.put("schema", "mx.reshard.shard_table.v2"),
            "schema",
            "expected 'mx.reshard.shard_table.v1', got 'mx.reshard.shard_table.v2'"),
        edit("missing schema", r -> r.remove("schema"), "schema", "missing required key"),
        edit(
            "schema of the wrong type",
            r -> r.put("schema", 1),
            "schema",
            "expected a string, got an integer"),
        edit(
            "missing agent_name",
            r -> r.remove("agent_name"),
            "agent_name",
            "missing required key"),
        edit(
            "agent_name null",
            r -> r.putNull("agent_name"),
            "agent_name",
            "expected a string, got null"),
        edit(
            "endpoint of the wrong type",
            r -> r.put("metadata_endpoint", 5555),
            "metadata_endpoint",
            "expected a string"),
        edit(
            "missing agent metadata",
            r -> r.remove("agent_meta_b64"),
            "agent_meta_b64",
            "missing required key"),
        edit(
            "agent metadata not base64",
            r -> r.put("agent_meta_b64", "not base64!"),
            "agent_meta_b64",
            "not base64"),
        edit("missing tensors", r -> r.remove("tensors"), "tensors", "missing required key"),
        edit(
            "tensors an object",
            r -> r.putObject("tensors"),
            "tensors",
            "expected an array, got an object"),
        edit(
            "tensor not an object",
            r -> ((ArrayNode) r.get("tensors")).set(2, 7),
            "tensors[2]",
            "expected an object, got an integer"),
        edit(
            "tensor without name",
            r -> tensor(r, 1).remove("name"),
            "tensors[1].name",
            "missing required key"),
        edit(
            "unknown dtype",
            r -> tensor(r, 0).put("dtype", "torch.complex32"),
            "tensors[0].dtype",
            "unknown dtype 'torch.complex32'"),
        edit(
            "elsize a string",
            r -> tensor(r, 0).put("elsize", "2"),
            "tensors[0].elsize",
            "expected an integer, got a string"),
        edit(
            "elsize zero", r -> tensor(r, 0).put("elsize", 0), "tensors[0].elsize", "out of range"),
        edit(
            "elsize not the dtype's",
            r -> tensor(r, 3).put("elsize", 4),
            "tensors[3].elsize",
            "does not match dtype torch.bfloat16 (2 bytes)"),
        edit(
            "full_shape with a fraction",
            r -> ((ArrayNode) tensor(r, 0).get("full_shape")).set(1, 2.5),
            "tensors[0].full_shape[1]",
            "expected an integer, got a number with a fraction"),
        edit(
            "full_shape negative",
            r -> ((ArrayNode) tensor(r, 0).get("full_shape")).set(0, -8),
            "tensors[0].full_shape[0]",
            "negative extent -8"),
        edit(
            "missing shards",
            r -> tensor(r, 2).remove("shards"),
            "tensors[2].shards",
            "missing required key"),
        edit(
            "shape a string",
            r -> shard(r, 3, 1).put("shape", "[8, 4]"),
            "tensors[3].shards[1].shape",
            "expected an array, got a string"),
        edit(
            "shape of another rank",
            r -> ((ArrayNode) shard(r, 3, 1).get("shape")).add(1),
            "tensors[3].shards[1].shape",
            "rank 3 does not match full_shape [8, 8]"),
        edit(
            "offset outside the tensor",
            r -> ((ArrayNode) shard(r, 1, 1).get("shard_offset")).set(1, 6),
            "tensors[1].shards[1].shard_offset",
            "leaves full_shape [8, 8] in dim 1"),
        edit(
            "missing device_id",
            r -> shard(r, 0, 0).remove("device_id"),
            "tensors[0].shards[0].device_id",
            "missing required key"),
        edit(
            "negative device_id",
            r -> shard(r, 0, 0).put("device_id", -1),
            "tensors[0].shards[0].device_id",
            "out of range"),
        edit(
            "addr a string",
            r -> shard(r, 2, 0).put("addr", "0x7f00"),
            "tensors[2].shards[0].addr",
            "expected an integer, got a string"),
        edit(
            "addr negative",
            r -> shard(r, 2, 0).put("addr", -4096),
            "tensors[2].shards[0].addr",
            "negative address"),
        edit(
            "addr beyond 64 bits",
            r -> shard(r, 2, 0).put("addr", BigInteger.ONE.shiftLeft(64)),
            "tensors[2].shards[0].addr",
            "not an unsigned 64-bit address"),
        edit(
            "shard without agent",
            r -> shard(r, 1, 0).remove("agent_name"),
            "tensors[1].shards[0].agent_name",
            "missing required key"),
        edit(
            "digest a number",
            r -> shard(r, 0, 1).put("digest", 12),
            "tensors[0].shards[1].digest",
            "expected a string, got an integer"),
        edit(
            "digest not hex",
            r -> shard(r, 0, 1).put("digest", "XYZ"),
            "tensors[0].shards[1].digest",
            "is not 32 lowercase hex characters"),
        edit(
            "step a string",
            r -> r.put("publisher_step", "3"),
            "publisher_step",
            "expected an integer, got a string"),
        edit(
            "step negative",
            r -> r.put("publisher_step", -1),
            "publisher_step",
            "negative step -1"),
        edit(
            "step beyond 64 bits",
            r -> r.put("publisher_step", BigInteger.TEN.pow(30)),
            "publisher_step",
            "does not fit in 64 bits"),
        replicas(
            "replica not an array",
            "[{\"name\": \"w\"}]",
            "replica_shards[0]",
            "expected an array, got an object"),
        replicas(
            "replica too short",
            "[[\"w\", 0, 8, [0], [4]]]",
            "replica_shards[0]",
            "a replica needs [tensor, device_id, addr, shard_offset, shape, digest], got 5"),
        replicas(
            "replica too long",
            "[[\"w\", 0, 8, [0], [4], null, 3, 4]]",
            "replica_shards[0][7]",
            "a replica has at most 7 elements"),
        replicas(
            "replica without a tensor name",
            "[[\"\", 0, 8, [0], [4], null]]",
            "replica_shards[0][0]",
            "empty tensor name"),
        replicas(
            "replica offset and shape of different rank",
            "[[\"w\", 0, 8, [0, 0], [4], null]]",
            "replica_shards[0][3]",
            "replica of tensor 'w': offset [0, 0] and shape [4] differ in rank"),
        replicas(
            "replica digest not hex",
            "[[\"w\", 0, 8, [0], [4], \"XYZ\"]]",
            "replica_shards[0][5]",
            "replica of tensor 'w': digest 'XYZ' is not 32 lowercase hex characters"),
        replicas(
            "replica changed step negative",
            "[[\"w\", 0, 8, [0], [4], null, -2]]",
            "replica_shards[0][6]",
            "negative"),
        replicas(
            "replica address a string",
            "[[\"w\", 0, \"8\", [0], [4], null]]",
            "replica_shards[0][2]",
            "got a string"));
  }

  /** The valid table with {@code json} as its {@code replica_shards}. */
  private static Arguments replicas(String name, String json, String path, String problem) {
    return edit(
        name,
        r -> {
          try {
            r.set("replica_shards", JSON.readTree(json));
          } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
          }
        },
        path,
        problem);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("cases")
  void isRejectedNamingThePath(String name, byte[] json, String path, String problem) {
    ShardTableFormatException e =
        assertThrows(
            ShardTableFormatException.class, () -> ShardTableCodec.standard().decode(json), name);
    assertEquals(path, e.path(), e.getMessage());
    assertTrue(
        e.getMessage().contains(problem), "'" + e.getMessage() + "' should say '" + problem + "'");
    assertTrue(e.getMessage().startsWith("shard table: " + path + ": "), e.getMessage());
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("cases")
  void theStreamingDecoderAgrees(String name, byte[] json, String path, String problem) {
    ShardTableFormatException e =
        assertThrows(
            ShardTableFormatException.class,
            () -> ShardTableCodec.standard().decode(new java.io.ByteArrayInputStream(json)),
            name);
    assertEquals(path, e.path(), e.getMessage());
  }

  @org.junit.jupiter.api.Test
  void theEditsApplyToAValidTable() throws java.io.IOException {
    JsonNode valid = JSON.readTree(edited(r -> {}));
    assertEquals(4, ShardTableCodec.standard().decode(JSON.writeValueAsBytes(valid)).entryCount());
  }
}
