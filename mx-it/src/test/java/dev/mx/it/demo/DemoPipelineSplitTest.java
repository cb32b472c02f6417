package dev.mx.it.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A Megatron trainer with an uneven pipeline split ({@code pp-first}) and experts split over fewer
 * ranks than the rest ({@code etp=1} under {@code tp=2}: a stage's 4 ranks hold each expert twice
 * and the dense weights' TP halves twice): the receivers install exactly, and every trainer rank
 * serves.
 */
class DemoPipelineSplitTest {

  @Test
  void unevenStagesAndExpertTensorParallelInstallExactly(@TempDir Path dump) throws Exception {
    DemoRun r =
        DemoRun.run(
            "--in-process",
            "--model",
            "tiny-deepseek",
            "--trainer",
            "tp=2,pp=3,ep=2,dp=2,pp-first=2,etp=1",
            "--inference",
            "tp=2,ep=2",
            "--steps",
            "2",
            "--dump",
            dump.toString(),
            "--json");
    assertEquals(0, r.code(), r.toString());
    JsonNode doc = r.json();
    JsonNode trainer = doc.get("run").get("trainer");
    assertEquals(2, trainer.get("pp-first").asInt(), doc.toString());
    assertEquals(1, trainer.get("etp").asInt(), doc.toString());
    JsonNode served = doc.get("bytes_served_per_trainer_rank");
    assertEquals(12, served.size(), served.toString());
    served
        .fields()
        .forEachRemaining(e -> assertTrue(e.getValue().asLong() > 0, e + " serves nothing"));
    DemoRun.assertDumpMatchesGenerator(dump, "tiny-deepseek", 2, 2, "bf16", "bf16", 1);
  }
}
