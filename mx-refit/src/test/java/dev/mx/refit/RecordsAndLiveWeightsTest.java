package dev.mx.refit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.refit.ParamSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class RecordsAndLiveWeightsTest {

  @Test
  void aRecordLineIsTheTagAndCompactJsonInFieldOrder() {
    Map<String, Object> r = new LinkedHashMap<>();
    r.put("schema", "refit-stage-v2");
    r.put("rank", 0);
    r.put("wire_fused_s", 0.123456);
    r.put("sample", List.of("a", "b"));
    assertEquals(
        "MX_REFIT_STAGE {\"schema\":\"refit-stage-v2\",\"rank\":0,\"wire_fused_s\":0.123456,\"sample\":[\"a\",\"b\"]}",
        RefitRecords.line("MX_REFIT_STAGE", r));
  }

  @Test
  void liveWeightsCopyOnInstallAndRejectAMismatchBeforeCopyingAnything() {
    Map<String, ParamSpec> layout = new LinkedHashMap<>();
    layout.put("a", new ParamSpec(Shape.of(2), DType.F32));
    layout.put("b", new ParamSpec(Shape.of(3), DType.F32));
    try (LiveWeights live = new LiveWeights(layout);
        Arena arena = Arena.ofConfined()) {
      MemorySegment a = arena.allocate(8);
      a.setAtIndex(ValueLayout.JAVA_FLOAT, 1, 5f);
      MemorySegment wrongB = arena.allocate(8);
      Map<String, MemorySegment> bad = new LinkedHashMap<>();
      bad.put("a", a);
      bad.put("b", wrongB);
      IllegalArgumentException e =
          assertThrows(IllegalArgumentException.class, () -> live.install(1, bad));
      assertTrue(e.getMessage().contains("'b'"), e.getMessage());
      assertEquals(0f, live.parameter("a").getAtIndex(ValueLayout.JAVA_FLOAT, 1), "nothing copied");
      assertEquals(0, live.installs());
      live.install(2, Map.of("a", a));
      assertEquals(5f, live.parameter("a").getAtIndex(ValueLayout.JAVA_FLOAT, 1));
      assertEquals(2, live.lastStep());
      assertThrows(IllegalArgumentException.class, () -> live.parameter("c"));
      live.close();
      live.close();
    }
  }
}
