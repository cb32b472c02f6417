package dev.mx.it.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * mx over ModelExpress's control plane: {@code mx demo --metadata mx-serve}, and {@code mx publish}
 * / {@code mx receive --follow} through an {@code mx serve} process, every rank its own JVM. The
 * receivers' dumps must equal the generator's weights element by element (bit-exact).
 */
class RefitServiceDemoTest {
  private static final String MODEL = "tiny-llama";
  @TempDir Path dir;

  @Test
  void demoOverMxServeDumpsTheGeneratorsWeights() throws Exception {
    Path dump = dir.resolve("dump");
    DemoRun r =
        DemoRun.run(
            "--metadata",
            "mx-serve",
            "--model",
            MODEL,
            "--trainer",
            "tp=2",
            "--inference",
            "tp=2",
            "--steps",
            "2",
            "--dump",
            dump.toString(),
            "--json");
    assertEquals(0, r.code(), r.toString());
    assertTrue(
        r.err().contains("RefitService (memory: backend) serving the job at mx://"), r.err());
    JsonNode report = r.json();
    assertTrue(report.get("ok").asBoolean(), r.out());
    DemoRun.assertDumpMatchesGenerator(dump, MODEL, 2, 1, "f32", "f32", 1);
    // Every step says how many shard tables it fetched: at most one per trainer rank.
    for (JsonNode step : report.get("steps")) {
      long fetched = step.get("tables_fetched").asLong();
      assertTrue(fetched >= 1 && fetched <= 2, step.toString());
    }
  }

  @Test
  void publishersAndFollowersInSeparateProcessesRefitThroughMxServe() throws Exception {
    List<Process> all = new ArrayList<>();
    try {
      String address = DemoRun.startServe(dir, all);
      List<String> job =
          DemoRun.tp2Job(
              MODEL,
              "mx://" + address,
              "shm",
              "mx-serve-" + UUID.randomUUID().toString().substring(0, 8));
      Path dump = dir.resolve("dump");
      List<Process> receivers = new ArrayList<>();
      for (int r = 0; r < 2; r++) {
        List<String> a = DemoRun.followingReceiver(r, 3, dump, job);
        receivers.add(
            DemoRun.mxProcess(dir.resolve("receiver-" + r + ".log"), a.toArray(String[]::new)));
      }
      all.addAll(receivers);
      for (int r = 0; r < 2; r++) {
        List<String> a = DemoRun.steppingPublisher(r, 3, "1", job);
        all.add(DemoRun.mxProcess(dir.resolve("trainer-" + r + ".log"), a.toArray(String[]::new)));
      }
      for (int r = 0; r < 2; r++) {
        JsonNode report =
            DemoRun.successfulReport(receivers.get(r), dir.resolve("receiver-" + r + ".log"));
        String out = report.toString();
        assertEquals(2, report.get("run").get("last_step").asLong(), out);
      }
      DemoRun.assertDumpMatchesGenerator(dump, MODEL, 2, 1, "f32", "f32", 2);
    } finally {
      DemoRun.destroyAll(all);
    }
  }
}
