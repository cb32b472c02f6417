package dev.mx.it.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Data-parallel trainer replicas all publish, and the receivers spread their reads over them: every
 * trainer rank serves, balanced, and the installed weights are exact.
 */
class DemoReplicasTest {

  @Test
  void twoDataParallelReplicasServeBalancedBytesAndInstallExactly(@TempDir Path dump)
      throws Exception {
    DemoRun r =
        DemoRun.run(
            "--model",
            "tiny-llama",
            "--trainer",
            "tp=2,dp=2",
            "--inference",
            "tp=2",
            "--steps",
            "2",
            "--dump",
            dump.toString(),
            "--json");
    assertEquals(0, r.code(), r.toString());
    JsonNode doc = r.json();
    assertEquals(2, doc.get("run").get("trainer").get("dp").asInt(), doc.toString());
    JsonNode served = doc.get("bytes_served_per_trainer_rank");
    List<String> ranks = new ArrayList<>();
    served.fieldNames().forEachRemaining(ranks::add);
    assertEquals(
        List.of("trainer-0", "trainer-1", "trainer-2", "trainer-3"), ranks, doc.toString());
    long total = 0;
    for (String rank : ranks) {
      assertTrue(served.get(rank).asLong() > 0, rank + " serves: " + served);
      total += served.get(rank).asLong();
    }
    long received = 0;
    for (JsonNode step : doc.get("steps")) {
      received += step.get("bytes").asLong();
    }
    assertEquals(received, total, "every byte received was served by one trainer rank");
    assertEquals(total, doc.get("bytes_served_per_source_kind").get("trainer").asLong());
    JsonNode balance = doc.get("serving_balance");
    assertEquals(4, balance.get("trainer_ranks").asInt());
    double ratio = balance.get("busiest_over_mean").asDouble();
    assertTrue(ratio >= 1.0 && ratio <= 1.10, "busiest / mean " + ratio + ": " + balance);
    DemoRun.assertDumpMatchesGenerator(dump, "tiny-llama", 2, 1, "f32", "f32", 1);
  }
}
