package dev.mx.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class MainTest {

  private record Run(int code, String out, String err) {}

  private static Run run(String... args) {
    PrintStream oldOut = System.out;
    PrintStream oldErr = System.err;
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    try {
      System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
      System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
      int code = Main.execute(args);
      return new Run(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    } finally {
      System.setOut(oldOut);
      System.setErr(oldErr);
    }
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
  void helpAndVersionExitZero() {
    Run help = run("--help");
    assertEquals(0, help.code());
    assertTrue(help.out().contains("transports"), help.out());
    Run v = run("--version");
    assertEquals(0, v.code());
    assertTrue(v.out().startsWith("mx "), v.out());
  }
}
