package dev.mx.rl.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.google.protobuf.Message;
import dev.mx.rl.proto.CreateWeightVersionShardRequest;
import dev.mx.rl.proto.WeightPayloadFormat;
import dev.mx.rl.proto.WeightVersionShard;
import dev.mx.rl.proto.WorkerRole;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;

/**
 * Our client's requests for the recorded lifecycle, built from the recorded values through {@link
 * RefitRequests}, encode to exactly the bytes ModelExpress's Python clients sent.
 */
class RefitRequestsTest {
  private static final Path VECTORS =
      Path.of("..").toAbsolutePath().normalize().resolveSibling("shared/golden/mx-rl/vectors");

  private static String t(JsonNode n, String field) {
    return n.get(field).asText();
  }

  private static Message build(String rpc, JsonNode f) {
    return switch (rpc) {
      case "RegisterWorker" ->
          RefitRequests.registerWorker(
              t(f.get("worker"), "worker_id"),
              WorkerRole.forNumber(f.get("worker").get("role").asInt()),
              t(f.get("worker"), "model_name"),
              f.get("ttl_seconds").asInt());
      case "CreateWeightVersion" -> {
        List<String> slots = new ArrayList<>();
        f.get("expected_source_slots").forEach(s -> slots.add(s.asText()));
        yield RefitRequests.createVersion(
            t(f, "model_name"),
            t(f, "idempotency_key"),
            WeightPayloadFormat.forNumber(f.get("payload_format").asInt()),
            slots,
            f.has("version_number")
                ? OptionalLong.of(Long.parseLong(t(f, "version_number")))
                : OptionalLong.empty(),
            f.has("base_version_id") ? Optional.of(t(f, "base_version_id")) : Optional.empty());
      }
      case "GetWeightVersion" -> RefitRequests.getVersion(t(f, "uid"));
      case "DeleteWeightVersion" -> RefitRequests.deleteVersion(t(f, "uid"));
      case "CreateWeightVersionShard" -> {
        JsonNode s = f.get("shard");
        yield CreateWeightVersionShardRequest.newBuilder()
            .setShard(
                WeightVersionShard.newBuilder()
                    .setVersionId(t(s, "version_id"))
                    .setSourceSlotId(t(s, "source_slot_id"))
                    .setWorkerId(t(s, "worker_id"))
                    .setTensorCount(Long.parseLong(t(s, "tensor_count")))
                    .setTotalBytes(Long.parseLong(t(s, "total_bytes")))
                    .setManifestDigest(t(s, "manifest_digest"))
                    .setManifestEndpoint(t(s, "manifest_endpoint"))
                    .setTransport(t(s, "transport")))
            .build();
      }
      case "ListWeightVersionShards" -> RefitRequests.listShards(t(f, "version_id"));
      case "DeleteWeightVersionShard" ->
          RefitRequests.deleteShard(t(f, "version_id"), t(f, "source_slot_id"), t(f, "worker_id"));
      case "RegisterVersionLease" ->
          RefitRequests.registerLease(
              t(f, "version_id"), t(f, "worker_id"), f.get("ttl_seconds").asInt());
      case "DeleteVersionLease" ->
          RefitRequests.deleteLease(t(f, "version_id"), t(f, "lease_id"), t(f, "worker_id"));
      case "GetWeightVersionShardManifest" ->
          RefitRequests.manifest(t(f, "version_id"), t(f, "source_slot_id"));
      default -> throw new AssertionError("no request builder for " + rpc);
    };
  }

  @Test
  void everyRecordedRequestIsWhatOurClientEncodes() throws Exception {
    JsonNode index = new ObjectMapper().readTree(VECTORS.resolve("index.json").toFile());
    int checked = 0;
    for (JsonNode e : index) {
      byte[] recorded = Files.readAllBytes(VECTORS.resolve(t(e, "request_file")));
      Message ours = build(t(e, "rpc"), e.get("request_fields"));
      assertArrayEquals(recorded, ours.toByteArray(), t(e, "request_file"));
      checked++;
    }
    assertEquals(29, checked);
  }
}
