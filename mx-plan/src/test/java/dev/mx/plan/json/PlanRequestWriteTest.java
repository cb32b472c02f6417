package dev.mx.plan.json;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.plan.BoundingMode;
import dev.mx.api.refit.ParamSpec;
import dev.mx.api.util.Settings;
import dev.mx.plan.PlanOptions;
import dev.mx.plan.ReshardPlanner;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * {@link PlanJson#writeRequest}: what it writes, {@link PlanJson#read} takes back unchanged, so a
 * harness outside mx plans and allocates from it what mx does.
 */
class PlanRequestWriteTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  private static final String REQUEST =
      """
      { "sources": { "w": { "dtype": "torch.bfloat16", "global_shape": [4, 8],
            "shards": [ { "session": "a", "addr": 4096, "offset": [0, 0], "shape": [2, 8],
                          "digest": "0123456789abcdef" },
                        { "session": "b", "addr": 8192, "offset": [2, 0], "shape": [2, 8] } ] },
          "r": { "dtype": "bf16", "global_shape": [4],
            "shards": [ { "session": "a", "addr": 100000, "offset": [0], "shape": [4] } ] } },
        "copies": [
          { "src": "w", "op_chain": [ ["narrow", [1, 0, 4]] ], "param": "p",
            "dest_offset": 0, "dest_shape": [4, 4], "dest_stride": [4, 1], "dest_dtype": "bf16" },
          { "src": "w", "op_chain": [ ["getitem", [[2, null]]], ["t", []] ], "param": "q",
            "dest_offset": 0, "dest_shape": [8, 2], "dest_stride": [2, 1], "dest_dtype": "bf16" },
          { "src": "r", "op_chain": [], "param": "router",
            "dest_offset": 0, "dest_shape": [4], "dest_stride": [1], "dest_dtype": "f32" } ],
        "unsupported": { "odd": "unsupported op 'index_select' on lazy 'odd' (chain=[])" },
        "params": { "p": { "shape": [4, 4], "dtype": "bf16" }, "q": { "shape": [8, 2], "dtype": "bf16" },
                    "router": { "shape": [4], "dtype": "torch.float32" } } }
      """;

  @Test
  void aWrittenRequestReadsBackToTheSamePlanAndParams() throws Exception {
    PlanJson.PlanRequest first = PlanJson.read(JSON.readTree(REQUEST));
    JsonNode written =
        JSON.readTree(
            JSON.writeValueAsString(
                PlanJson.writeRequest(first.sources(), first.capture(), first.params())));
    PlanJson.PlanRequest second = PlanJson.read(written);

    assertEquals(
        Map.of(
            "p", new ParamSpec(Shape.of(4, 4), DType.BF16),
            "q", new ParamSpec(Shape.of(8, 2), DType.BF16),
            "router", new ParamSpec(Shape.of(4), DType.F32)),
        second.params());
    assertEquals("0123456789abcdef", written.at("/sources/w/shards/0/digest").asText());
    assertTrue(written.at("/sources/w/shards/1/digest").isMissingNode(), written.toString());
    assertEquals(
        "unsupported op 'index_select' on lazy 'odd' (chain=[])",
        written.at("/unsupported/odd").asText());
    assertEquals(plan(first), plan(second));
    // The plan reads every kind: exact segments, a convert (bf16 served, f32 param), the fallback.
    JsonNode plan = plan(second);
    assertEquals(1, plan.get("converts").size(), plan.toString());
    assertEquals("odd", plan.get("fallback").get(0).asText());
    assertTrue(plan.get("segments").size() > 0, plan.toString());
  }

  @Test
  void paramsWithAnUnknownKeyOrNoShapeAreRefusedNamingTheParam() throws Exception {
    IllegalArgumentException unknown =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                PlanJson.read(
                    JSON.readTree(
                        "{\"sources\": {}, \"params\": {\"p\": {\"shape\": [1], \"dtype\": \"bf16\","
                            + " \"stride\": [1]}}}")));
    assertTrue(
        unknown.getMessage().startsWith("params.p.stride: unknown key"), unknown.getMessage());
    IllegalArgumentException missing =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                PlanJson.read(
                    JSON.readTree(
                        "{\"sources\": {}, \"params\": {\"p\": {\"dtype\": \"bf16\"}}}")));
    assertTrue(missing.getMessage().contains("params.p"), missing.getMessage());
    assertTrue(missing.getMessage().contains("shape"), missing.getMessage());
  }

  private static JsonNode plan(PlanJson.PlanRequest request) {
    return JSON.valueToTree(
        PlanJson.write(
            new ReshardPlanner()
                .plan(
                    request.capture(),
                    request.sources(),
                    PlanOptions.fromSettings(
                        BoundingMode.MODELEXPRESS, Settings.of(Map.of(), Map.of())))));
  }
}
