package dev.mx.rl;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.google.protobuf.Message;
import com.google.protobuf.util.JsonFormat;
import dev.mx.rl.proto.CreateWeightVersionRequest;
import dev.mx.rl.proto.DeleteVersionLeaseRequest;
import dev.mx.rl.proto.RegisterWorkerRequest;
import dev.mx.rl.proto.VersionLease;
import dev.mx.rl.proto.WeightPayloadFormat;
import dev.mx.rl.proto.WorkerRole;
import io.grpc.MethodDescriptor;
import java.io.ByteArrayInputStream;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every recorded request and response parses with our generated messages into exactly the fields
 * index.json states (proto3's JSON mapping: field names as in the .proto, enums as numbers, uint64
 * as strings), with no unknown field left over, and encodes back to the same bytes. The Python
 * clients write fields in number order and omit defaults, as protobuf-java does, so no field may
 * differ (SPEC.md section 17).
 */
class VectorCodecTest {
  private static final JsonFormat.Printer PRINTER =
      JsonFormat.printer().preservingProtoFieldNames().printingEnumsAsInts();
  private static final Map<String, MethodDescriptor<?, ?>> METHODS = GoldenVectors.methods();

  static Stream<GoldenVectors.Call> calls() {
    return GoldenVectors.calls().stream();
  }

  private static void assertDecodes(
      GoldenVectors.Call call, Message parsed, byte[] bytes, String type, JsonNode fields)
      throws Exception {
    if (type != null) {
      assertEquals(type, parsed.getDescriptorForType().getFullName(), call + ": message type");
    }
    assertTrue(
        parsed.getUnknownFields().asMap().isEmpty(),
        call + ": fields our .proto does not know: " + parsed.getUnknownFields());
    assertEquals(fields, GoldenVectors.JSON.readTree(PRINTER.print(parsed)), call + ": fields");
    assertArrayEquals(bytes, parsed.toByteArray(), call + ": re-encoded bytes");
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("calls")
  void requestAndResponseDecodeToTheRecordedFieldsAndReencodeToTheSameBytes(GoldenVectors.Call call)
      throws Exception {
    MethodDescriptor<?, ?> method = METHODS.get(call.fullMethodName());
    assertNotNull(method, call + ": no method " + call.fullMethodName() + " in our services");
    assertEquals(call.entry().get("request_len").asInt(), call.request().length);
    assertEquals(
        call.entry().get("request_hex").asText(), HexFormat.of().formatHex(call.request()));
    Message request = (Message) method.parseRequest(new ByteArrayInputStream(call.request()));
    assertDecodes(
        call,
        request,
        call.request(),
        call.entry().get("request_type").asText(),
        call.entry().get("request_fields"));
    if (call.status().equals("OK")) {
      assertNotNull(call.response(), call + ": an OK call without response bytes");
      assertEquals(
          call.entry().get("response_hex").asText(), HexFormat.of().formatHex(call.response()));
      Message response = (Message) method.parseResponse(new ByteArrayInputStream(call.response()));
      assertDecodes(call, response, call.response(), null, call.entry().get("response_fields"));
    } else {
      assertTrue(call.entry().get("response_fields").isNull(), call + ": an error with fields");
      assertFalse(call.errorMessage().isEmpty(), call + ": an error without a message");
    }
  }

  @Test
  void theLifecycleHas29CallsOf23SuccessesAnd6Errors() {
    List<GoldenVectors.Call> calls = GoldenVectors.calls();
    assertEquals(29, calls.size());
    assertEquals(23, calls.stream().filter(c -> c.status().equals("OK")).count());
  }

  @Test
  void annotatedExamplesOfSpecSection17HoldTheirValues() throws Exception {
    List<GoldenVectors.Call> calls = GoldenVectors.calls();
    RegisterWorkerRequest r1 = RegisterWorkerRequest.parseFrom(calls.get(0).request());
    assertEquals("trainer0-golden", r1.getWorker().getWorkerId());
    assertEquals(WorkerRole.WORKER_ROLE_TRAINER, r1.getWorker().getRole());
    assertEquals("mx-probe/tiny-llama-2l-h64", r1.getWorker().getModelName());
    assertEquals(120, r1.getTtlSeconds());
    assertEquals(0, r1.getWorker().getExpiresAtUnixMs());

    CreateWeightVersionRequest r3 = CreateWeightVersionRequest.parseFrom(calls.get(2).request());
    assertTrue(r3.hasVersionNumber());
    assertEquals(7, r3.getVersionNumber());
    assertEquals("probe-publish-golden", r3.getIdempotencyKey());
    assertEquals(WeightPayloadFormat.WEIGHT_PAYLOAD_FORMAT_FULL_TENSOR, r3.getPayloadFormat());
    assertFalse(r3.hasBaseVersionId());
    assertEquals(2, r3.getExpectedSourceSlotsCount());
    assertEquals(83, r3.getExpectedSourceSlots(0).length());

    CreateWeightVersionRequest r6 = CreateWeightVersionRequest.parseFrom(calls.get(5).request());
    assertTrue(r6.hasBaseVersionId());
    assertEquals("edf6993a", r6.getBaseVersionId());
    assertFalse(r6.hasVersionNumber());

    VersionLease l16 = VersionLease.parseFrom(calls.get(15).response());
    assertEquals("880cdd5b", l16.getLeaseId());
    assertEquals(1767225720000L, l16.getExpiresAtUnixMs());
    DeleteVersionLeaseRequest r24 = DeleteVersionLeaseRequest.parseFrom(calls.get(23).request());
    assertEquals("880cdd5b", r24.getLeaseId());
    assertEquals("generator0-golden", r24.getWorkerId());
  }

  @Test
  void leaseAndUidDerivationsGiveTheRecordedIds() {
    assertEquals("880cdd5b", VersionUids.leaseId("edf6993a", "generator0-golden"));
    assertEquals(
        "edf6993a",
        VersionUids.deterministic()
            .next(
                CreateWeightVersionRequest.newBuilder()
                    .setModelName("mx-probe/tiny-llama-2l-h64")
                    .setIdempotencyKey("probe-publish-golden")
                    .build(),
                0));
  }
}
