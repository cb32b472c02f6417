package dev.mx.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;

class MainTest {

  private record Run(int code, String out, String err) {}

  private static Run run(String... args) {
    CliProcess.Run r = CliProcess.inProcess(args);
    return new Run(r.code(), r.out(), r.err());
  }

  @Test
  void transportsListsMemAsAvailable() {
    Run r = run("transports");
    assertEquals(0, r.code(), r.err());
    assertTrue(r.out().lines().anyMatch(l -> l.startsWith("mem") && l.contains("yes")), r.out());
  }

  @Test
  void transportsJsonIsValidAndCarriesTheFields() throws Exception {
    Run r = run("transports", "--json");
    assertEquals(0, r.code(), r.err());
    JsonNode list = Json.mapper().readTree(r.out());
    assertTrue(list.isArray());
    JsonNode mem = null;
    for (JsonNode n : list) {
      if (n.get("name").asText().equals("mem")) {
        mem = n;
      }
    }
    assertTrue(mem != null, r.out());
    assertTrue(mem.get("available").asBoolean());
    assertEquals(0, mem.get("priority").asInt());
    assertTrue(mem.has("unavailability_cause"));
  }

  @Test
  void badUsageExitsTwo() {
    assertEquals(2, run("no-such-command").code());
    assertEquals(2, run("bench").code());
  }

  @Test
  void benchWithoutMxBenchOnTheClassPathSaysWhereTheBenchmarksAre() {
    // This module's tests run without mx-bench, as a CLI shipped without it would.
    Run r = run("bench", "mem");
    assertEquals(2, r.code(), r.err());
    assertTrue(
        r.err()
            .contains(
                "unknown benchmark 'mem'; no benchmarks on the class path (they ship in mx-bench's"
                    + " jar)"),
        r.err());
  }

  @Test
  void helpAndVersionExitZero() {
    Run help = run("--help");
    assertEquals(0, help.code());
    assertTrue(help.out().contains("transports"), help.out());
    Run v = run("--version");
    assertEquals(0, v.code());
    assertTrue(v.out().startsWith("mx "), v.out());
  }
}
