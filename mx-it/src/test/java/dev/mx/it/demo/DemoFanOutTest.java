package dev.mx.it.demo;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code --serve-installed}: inference groups in child JVMs over shm, group 0 reading the trainers
 * and each later group reading only the installed (verified) weights of the group before it; every
 * group's dump equals group 0's byte for byte, and group 0's equals the generator's values.
 */
class DemoFanOutTest {

  /** Tiny Llama, trainer tp=2, inference tp=2, {@code groups} groups serving installed weights. */
  private static DemoRun fanOut(int groups, int steps, Path dump, String... extra) {
    List<String> a =
        new ArrayList<>(
            List.of(
                "--model",
                "tiny-llama",
                "--trainer",
                "tp=2",
                "--inference",
                "tp=2",
                "--inference-groups",
                Integer.toString(groups),
                "--serve-installed",
                "--steps",
                Integer.toString(steps),
                "--dump",
                dump.toString(),
                "--json"));
    a.addAll(List.of(extra));
    return DemoRun.run(a.toArray(String[]::new));
  }

  /** The sessions that served group {@code group}'s reads: the group before it, or the trainers. */
  private static void assertReadFrom(JsonNode doc, int group, String sessionPrefix) {
    int rows = 0;
    for (JsonNode s : doc.get("steps")) {
      if (s.get("group").asInt() != group) {
        continue;
      }
      rows++;
      assertTrue(s.get("bytes").asLong() > 0, s.toString());
      long served = 0;
      for (var e : s.get("bytes_by_session").properties()) {
        assertTrue(
            e.getKey().startsWith(sessionPrefix),
            "group " + group + " read only from " + sessionPrefix + "*: " + s);
        served += e.getValue().asLong();
      }
      assertEquals(s.get("bytes").asLong(), served, s.toString());
    }
    assertTrue(rows > 0, "group " + group + " has step rows: " + doc);
  }

  private static void assertSameDump(Path dump, String file, String reference) throws Exception {
    assertArrayEquals(
        Files.readAllBytes(dump.resolve(reference)),
        Files.readAllBytes(dump.resolve(file)),
        file + " equals " + reference);
  }

  /**
   * Four groups in doubling rounds: group 1 reads group 0, then groups 2 and 3 read groups 0 and 1
   * at once.
   */
  @Test
  void groupsReadInstalledWeightsInDoublingRoundsAndEveryGroupInstallsExactly(@TempDir Path dump)
      throws Exception {
    DemoRun r = fanOut(4, 2, dump);
    assertEquals(0, r.code(), r.toString());
    JsonNode doc = r.json();
    assertEquals(2 * 4 * 2, doc.get("steps").size(), "steps x groups x ranks: " + doc);
    assertReadFrom(doc, 0, "trainer-");
    assertReadFrom(doc, 1, "receiver-");
    assertReadFrom(doc, 2, "receiver-");
    assertReadFrom(doc, 3, "group1-receiver-");
    List<String> sources =
        List.of("trainer", "installed:group-0", "installed:group-0", "installed:group-1");
    for (JsonNode s : doc.get("steps")) {
      // Groups 0 and 1 publish what they committed; groups 2 and 3 serve nobody.
      int g = s.get("group").asInt();
      assertEquals(g < 2, s.has("serve_s"), s.toString());
      assertEquals(sources.get(g), s.get("source").asText());
    }
    assertEquals(
        "[{\"group\":0,\"sources\":[\"trainer\"],\"serves_installed\":true},"
            + "{\"group\":1,\"sources\":[\"installed:group-0\"],\"round\":1,\"serves_installed\":true},"
            + "{\"group\":2,\"sources\":[\"installed:group-0\"],\"round\":2,\"serves_installed\":false},"
            + "{\"group\":3,\"sources\":[\"installed:group-1\"],\"round\":2,\"serves_installed\":false}]",
        doc.get("run").get("source_order").toString());
    JsonNode kinds = doc.get("bytes_served_per_source_kind");
    // Every group reads the same bytes per step: groups 1 to 3 read three times what the trainers
    // served.
    assertEquals(
        3 * kinds.get("trainer").asLong(), kinds.get("installed").asLong(), doc.toString());
    JsonNode installed = doc.get("bytes_served_per_installed_rank");
    assertEquals(
        List.of("group1-receiver-0", "group1-receiver-1", "receiver-0", "receiver-1"),
        iterableNames(installed));
    assertEquals(0, doc.get("unverified_bytes").asLong());
    DemoRun.assertDumpMatchesGenerator(dump, "tiny-llama", 2, 1, "f32", "f32", 1);
    for (int rank = 0; rank < 2; rank++) {
      String reference = "receiver-" + rank + ".safetensors";
      for (int g = 1; g < 4; g++) {
        assertSameDump(dump, "group" + g + "-receiver-" + rank + ".safetensors", reference);
      }
    }
  }

  private static List<String> iterableNames(JsonNode object) {
    List<String> names = new ArrayList<>();
    object.fieldNames().forEachRemaining(names::add);
    return names;
  }

  @Test
  void aGroupStartingFromACheckpointServesItsLiveStepsToTheNextGroup(
      @TempDir Path ckpt, @TempDir Path dump) throws Exception {
    DemoRun w =
        DemoRun.command(
            "checkpoint",
            "--model",
            "tiny-llama",
            "--step",
            "0",
            "--dtype",
            "bf16",
            "--out",
            ckpt.toString());
    assertEquals(0, w.code(), w.toString());
    DemoRun r = fanOut(2, 2, dump, "--source", "checkpoint:" + ckpt);
    assertEquals(0, r.code(), r.toString());
    JsonNode doc = r.json();
    assertEquals(2, doc.get("checkpoint").size(), "group 0 started from the checkpoint: " + doc);
    assertEquals(
        "[\"checkpoint\",\"trainer\"]",
        doc.get("run").get("source_order").get(0).get("sources").toString());
    assertReadFrom(doc, 1, "receiver-");
    DemoRun.assertDumpMatchesGenerator(dump, "tiny-llama", 2, 1, "f32", "f32", 1);
    for (int rank = 0; rank < 2; rank++) {
      assertSameDump(
          dump, "group1-receiver-" + rank + ".safetensors", "receiver-" + rank + ".safetensors");
    }
  }

  @Test
  void aGroupTornByAFailedStepServesNothingAndTheNextGroupKeepsThePreviousStep(@TempDir Path dump)
      throws Exception {
    // Trainer 0 is killed half-way through group 0's in-place reads of step 1; with one trainer
    // buffer set there is nothing to restore from.
    DemoRun r = fanOut(2, 2, dump, "--fault", "kill-publisher-mid-read", "--trainer-buffers", "1");
    assertEquals(1, r.code(), r.toString());
    JsonNode doc = r.json();
    assertTrue(doc.get("error").asText().contains("trainer-"), "names the dead trainer: " + doc);
    boolean torn = false;
    for (JsonNode w : doc.get("live_weights")) {
      if (w.get("group").asInt() == 0) {
        torn |= "torn".equals(w.get("state").asText());
      } else {
        assertEquals("whole", w.get("state").asText(), "group 1 never read step 1: " + w);
        assertEquals(0, w.get("step").asLong(), w.toString());
      }
    }
    assertTrue(torn, "group 0 was torn part-way: " + doc.get("live_weights"));
    for (JsonNode s : doc.get("steps")) {
      assertEquals(0, s.get("step").asInt(), "no step 1 row: " + s);
    }
    DemoRun.assertDumpMatchesGenerator(
        dump, "group1-receiver-", "tiny-llama", 2, 1, "f32", "f32", 0, null);
  }

  /**
   * The operator's path: {@code mx publish} trainers and engine A of {@code mx receive --follow
   * --serve-installed} ranks install two versions; engine B, started once A serves the last one (a
   * replica joining late), installs it with {@code mx receive --follow --from-installed} from A
   * only, exactly. Every rank is a process of its own over shm.
   */
  @Test
  void mxReceiveServesItsInstalledVersionsToAnotherEngine(@TempDir Path dir) throws Exception {
    List<String> job =
        DemoRun.tp2Job(
            "tiny-llama",
            "file:" + dir.resolve("store"),
            "shm",
            "mx-fanout-" + java.util.UUID.randomUUID().toString().substring(0, 8));
    Path dumpA = dir.resolve("a");
    Path dumpB = dir.resolve("b");
    List<Process> all = new ArrayList<>();
    try {
      List<Process> a = new ArrayList<>();
      for (int r = 0; r < 2; r++) {
        List<String> served = DemoRun.followingReceiver(r, 2, dumpA, job);
        served.add("--serve-installed");
        a.add(DemoRun.mxProcess(dir.resolve("a-" + r + ".log"), served.toArray(String[]::new)));
      }
      all.addAll(a);
      for (int r = 0; r < 2; r++) {
        List<String> t = DemoRun.steppingPublisher(r, 2, "1", job);
        all.add(DemoRun.mxProcess(dir.resolve("trainer-" + r + ".log"), t.toArray(String[]::new)));
      }
      // Engine A reports once it installed both versions, then serves the last until stopped.
      for (int r = 0; r < 2; r++) {
        JsonNode served = reportOfServing(a.get(r), dir.resolve("a-" + r + ".log"));
        assertTrue(served.get("ok").asBoolean(), served.toString());
        assertEquals(1, served.get("run").get("last_step").asLong(), served.toString());
        for (JsonNode s : served.get("steps")) {
          assertTrue(s.has("serve_s"), "engine A served step " + s.get("step") + ": " + s);
        }
      }
      List<Process> b = new ArrayList<>();
      for (int r = 0; r < 2; r++) {
        List<String> reading = DemoRun.followingReceiver(r, 1, dumpB, job);
        reading.add("--from-installed");
        b.add(DemoRun.mxProcess(dir.resolve("b-" + r + ".log"), reading.toArray(String[]::new)));
      }
      all.addAll(b);
      for (int r = 0; r < 2; r++) {
        JsonNode read = DemoRun.successfulReport(b.get(r), dir.resolve("b-" + r + ".log"));
        assertEquals(1, read.get("run").get("last_step").asLong(), read.toString());
        assertEquals(0, read.get("bytes_served_per_source_kind").get("trainer").asLong());
        assertTrue(
            read.get("bytes_served_per_source_kind").get("installed").asLong() > 0,
            read.toString());
        for (String session : iterableNames(read.get("bytes_served_per_installed_rank"))) {
          assertTrue(session.startsWith("receiver-"), "engine B read engine A only: " + read);
        }
      }
      DemoRun.assertDumpMatchesGenerator(dumpA, "tiny-llama", 2, 1, "f32", "f32", 1);
      DemoRun.assertDumpMatchesGenerator(
          dumpB, "group1-receiver-", "tiny-llama", 2, 1, "f32", "f32", 1, null);
    } finally {
      DemoRun.destroyAll(all);
    }
  }

  /**
   * The JSON report a serving {@code mx receive} prints before it serves until stopped: its stdout
   * up to the document's closing line (within 240 s, or the test fails showing the log).
   */
  private static JsonNode reportOfServing(Process p, Path log) throws Exception {
    java.util.concurrent.CompletableFuture<String> doc =
        java.util.concurrent.CompletableFuture.supplyAsync(
            () -> {
              StringBuilder b = new StringBuilder();
              try (var lines =
                  new java.io.BufferedReader(
                      new java.io.InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line = lines.readLine(); line != null; line = lines.readLine()) {
                  b.append(line).append('\n');
                  if (line.equals("}")) {
                    break;
                  }
                }
              } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
              }
              return b.toString();
            });
    String out;
    try {
      out = doc.get(240, java.util.concurrent.TimeUnit.SECONDS);
    } catch (java.util.concurrent.TimeoutException e) {
      throw new AssertionError(log + ": no report within 240 s\n" + Files.readString(log), e);
    }
    assertTrue(p.isAlive(), log + ": serves after its report\n" + Files.readString(log));
    return new com.fasterxml.jackson.databind.ObjectMapper().readTree(out);
  }

  @Test
  void servingOptionsThatCannotWorkAreRefusedBeforeAnythingStarts() {
    DemoRun.assertRefused("--inference-groups 2 or more", "--serve-installed");
    DemoRun.assertRefused("--inference-groups must be 1 to 8", "--inference-groups", "9");
    DemoRun receive =
        DemoRun.command(
            "receive", "--rank", "0", "--metadata", "file:/tmp/mx-unused", "--serve-installed");
    assertEquals(2, receive.code(), receive.toString());
    assertTrue(receive.err().contains("add --follow"), receive.err());
    DemoRun.assertRefused(
        "cannot be served",
        "--inference-groups",
        "2",
        "--serve-installed",
        "--inference-dtype",
        "fp8-block");
  }
}
