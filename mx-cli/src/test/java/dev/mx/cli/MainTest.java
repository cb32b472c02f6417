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

  /**
   * picocli formats descriptions with {@code String.format}: an unescaped {@code %} made every
   * {@code --help} start with "[picocli WARN] Could not format" lines. Every command's help, nested
   * ones included, prints none.
   */
  @Test
  void everyCommandsHelpPrintsNoWarning() {
    java.util.List<java.util.List<String>> commands = new java.util.ArrayList<>();
    collect(new picocli.CommandLine(new Main()), new java.util.ArrayList<>(), commands);
    assertTrue(commands.size() >= 7, "commands found: " + commands);
    for (java.util.List<String> command : commands) {
      java.util.List<String> args = new java.util.ArrayList<>(command);
      args.add("--help");
      Run r = run(args.toArray(String[]::new));
      assertEquals(0, r.code(), args + ": " + r.err());
      assertTrue(r.out().startsWith("Usage: mx"), args + ": " + r.out());
      assertTrue(!r.err().contains("WARN") && !r.out().contains("WARN"), args + ": " + r.err());
    }
  }

  private static void collect(
      picocli.CommandLine cl,
      java.util.List<String> path,
      java.util.List<java.util.List<String>> out) {
    for (var e : cl.getSubcommands().entrySet()) {
      if (e.getValue().getCommandSpec().usageMessage().hidden() || e.getKey().equals("help")) {
        continue;
      }
      java.util.List<String> p = new java.util.ArrayList<>(path);
      p.add(e.getKey());
      out.add(p);
      collect(e.getValue(), p, out);
    }
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
