package dev.mx.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.mx.cli.PlanCommandTest.Run;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code mx plan} modes and input checks: without {@code --bounding} the output is byte for byte
 * what main's planner printed (golden files of 25 requests: the ModelExpress (ARCHITECTURE §7.9)
 * slice, transfer and MoE cases and seeded random layouts); {@code --bounding shard} and {@code
 * "bounding": "shard"} select the cost model; bad inputs exit 1 naming the JSON path, with no stack
 * trace.
 */
class PlanBoundingCommandTest {
  private static final String GOLDEN = "/dev/mx/cli/plan/golden/";

  private static String resource(String name) throws IOException {
    try (InputStream in = PlanBoundingCommandTest.class.getResourceAsStream(GOLDEN + name)) {
      if (in == null) {
        throw new IOException("missing test resource " + GOLDEN + name);
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  private static List<String> goldenCases() throws IOException {
    List<String> names = new ArrayList<>();
    for (String line : resource("index.txt").split("\n")) {
      if (!line.isBlank()) {
        names.add(line.trim());
      }
    }
    return names;
  }

  private static Run run(String stdin, String... args) {
    return PlanCommandTest.run(stdin, args);
  }

  @Test
  void defaultOutputIsByteIdenticalToMainForEveryGoldenRequest(@TempDir Path dir)
      throws IOException {
    List<String> cases = goldenCases();
    assertEquals(25, cases.size());
    for (String c : cases) {
      Path f = dir.resolve(c + ".json");
      Files.writeString(f, resource(c + ".json"));
      Run json = run(null, "plan", f.toString());
      assertEquals(0, json.code(), c + ": " + json.err());
      assertEquals(resource(c + ".out"), json.out(), c + ": default JSON");
      Run explicit = run(null, "plan", "--bounding", "modelexpress", f.toString());
      assertEquals(resource(c + ".out"), explicit.out(), c + ": --bounding modelexpress");
      Run summary = run(null, "plan", "--summary", f.toString());
      assertEquals(resource(c + ".summary"), summary.out(), c + ": --summary");
    }
  }

  @Test
  void everyGoldenRequestAlsoPlansInShardMode(@TempDir Path dir) throws IOException {
    for (String c : goldenCases()) {
      Path f = dir.resolve(c + ".json");
      Files.writeString(f, resource(c + ".json"));
      Run r = run(null, "plan", "--bounding", "shard", f.toString());
      assertEquals(0, r.code(), c + ": " + r.err());
      JsonNode plan = Json.mapper().readTree(r.out());
      JsonNode legacy = Json.mapper().readTree(resource(c + ".out"));
      assertEquals("shard", plan.get("bounding").asText(), c);
      assertEquals(
          legacy.get("exact_bytes"),
          plan.get("exact_bytes"),
          c + ": the exact baseline does not depend on the mode");
      if (legacy.get("fallback").isEmpty()) {
        assertTrue(
            plan.get("descriptor_count").asLong() <= legacy.get("descriptor_count").asLong(),
            c + ": shard bounding never reads more descriptors than ModelExpress bounding here");
        assertEquals(legacy.get("fallback"), plan.get("fallback"), c);
      }
    }
  }

  /**
   * Eight column shards of a (16, 32) f32 weight; the copy reads columns 16..31, a dim-1 TP split.
   */
  private static final String DIM1 =
      """
      { "sources": { "o_proj": { "dtype": "torch.float32", "global_shape": [16, 32], "shards": [
          { "session": "t0", "addr": 100000, "offset": [0, 0],  "shape": [16, 8] },
          { "session": "t1", "addr": 200000, "offset": [0, 8],  "shape": [16, 8] },
          { "session": "t2", "addr": 300000, "offset": [0, 16], "shape": [16, 8] },
          { "session": "t3", "addr": 400000, "offset": [0, 24], "shape": [16, 8] } ] } },
        "copies": [ { "src": "o_proj", "op_chain": [ ["narrow", [1, 16, 16]] ], "param": "o",
          "dest_offset": 0, "dest_shape": [16, 16], "dest_stride": [16, 1], "dest_dtype": "f32" } ] }
      """;

  @Test
  void shardModeStagesTouchedShardsAndSaysWhy() throws IOException {
    Run legacy = run(DIM1, "plan", "-");
    assertEquals(32, Json.mapper().readTree(legacy.out()).get("descriptor_count").asLong());
    Run r = run(DIM1, "plan", "--bounding", "shard", "-");
    assertEquals(0, r.code(), r.err());
    JsonNode plan = Json.mapper().readTree(r.out());
    assertEquals(2, plan.get("descriptor_count").asLong());
    assertEquals(0, plan.get("segments").size());
    assertEquals(0, plan.get("extra_wire_bytes").asLong());
    JsonNode st = plan.get("staged_shards");
    assertEquals(2, st.size());
    assertEquals(2, st.get(0).get("shard_index").asInt());
    assertEquals("__stage__/o_proj/2", st.get(0).get("segment").get("param").asText());
    assertEquals(300000, st.get(0).get("segment").get("src_addr").asLong());
    assertEquals(512, st.get(0).get("segment").get("nbytes").asLong());
    assertEquals(8, st.get(1).get("copies").get(0).get("dest_offset").asLong());
    JsonNode d = plan.get("bounding_decisions").get(0);
    assertEquals("o_proj", d.get("src").asText());
    assertEquals("shard_staging", d.get("chosen").asText());
    assertTrue(
        d.get("reason").asText().startsWith("shard_staging is cheapest: 2 descriptors"),
        d.toString());
    assertEquals(1, plan.get("bounding_counts").get("shard_staging").asInt());

    // the same through the file's "bounding" key, and in the summary
    String inFile = DIM1.replaceFirst("\\{ \"sources\"", "{ \"bounding\": \"shard\", \"sources\"");
    assertEquals(r.out(), run(inFile, "plan", "-").out());
    Run s = run(inFile, "plan", "--summary", "-");
    assertTrue(
        s.out().lines().anyMatch(l -> l.startsWith("sources") && l.contains("1 shard_staging")),
        s.out());
    assertTrue(
        s.out()
            .lines()
            .anyMatch(l -> l.startsWith("o_proj") && l.contains("shard_staging is cheapest")),
        s.out());
    // the command line wins over the file
    assertEquals(legacy.out(), run(inFile, "plan", "--bounding", "modelexpress", "-").out());
  }

  private static void rejected(String request, String path, String detail) {
    Run r = run(request, "plan", "-");
    assertEquals(1, r.code(), request + " -> " + r.out());
    assertTrue(r.err().contains("<stdin>: " + path + ": "), r.err());
    assertTrue(r.err().contains(detail), r.err());
    assertEquals(1, r.err().lines().count(), "one line, no stack trace: " + r.err());
    Run shard = run(request, "plan", "--bounding", "shard", "-");
    assertEquals(1, shard.code());
    assertEquals(r.err(), shard.err(), "both modes check inputs alike");
  }

  @Test
  void badInputsExitOneNamingTheJsonPath() {
    rejected(
        DIM1.replace(
            "\"offset\": [0, 24], \"shape\": [16, 8]", "\"offset\": [0, 24], \"shape\": [8, 8]"),
        "sources.o_proj.shards",
        "no shard holds [8:16, 24:32]");
    rejected(
        DIM1.replace(
                "\"offset\": [0, 16], \"shape\": [16, 8]",
                "\"offset\": [0, 14], \"shape\": [16, 8]")
            .replace("\"offset\": [0, 24]", "\"offset\": [0, 22]"),
        "sources.o_proj.shards[2]",
        "overlap in [0:16, 14:16]");
    rejected(
        DIM1.replace("\"addr\": 200000", "\"addr\": -8"),
        "sources.o_proj.shards[1].addr",
        "is negative");
    rejected(
        DIM1.replace("\"addr\": 400000", "\"addr\": 9223372036854775500"),
        "sources.o_proj.shards[3].addr",
        "ends past the largest address");
    rejected(
        DIM1.replace("\"dest_stride\": [16, 1]", "\"dest_stride\": [8, 1]"),
        "copies[0].dest_stride",
        "at one place");
    rejected(
        DIM1.replace("\"global_shape\": [16, 32]", "\"global_shape\": [4611686018427387904, 32]"),
        "sources.o_proj.global_shape",
        "more than 2^63-1 bytes");
    rejected(
        DIM1.replace("\"dest_shape\": [16, 16]", "\"dest_shape\": [4611686018427387904, 16]"),
        "copies[0].dest_shape",
        "more than 2^63-1 bytes");
  }

  @Test
  void aDeclaredPartialSourceMayHaveHoles() throws IOException {
    String holes =
        DIM1.replace(
                "\"offset\": [0, 0],  \"shape\": [16, 8] },",
                "\"offset\": [0, 0],  \"shape\": [8, 8] },")
            .replace(
                "\"global_shape\": [16, 32],", "\"global_shape\": [16, 32], \"partial\": true,");
    Run r = run(holes, "plan", "-");
    assertEquals(0, r.code(), r.err());
    assertEquals(32, Json.mapper().readTree(r.out()).get("descriptor_count").asLong());
    Run bad = run(holes.replace("\"partial\": true", "\"partial\": \"yes\""), "plan", "-");
    assertEquals(1, bad.code());
    assertTrue(bad.err().contains("sources.o_proj.partial: expected true or false"), bad.err());
  }

  @Test
  void deeplyNestedJsonIsANamedError() {
    String deep = "[".repeat(100_000) + "]".repeat(100_000);
    Run r = run(deep, "plan", "-");
    assertEquals(1, r.code());
    assertTrue(
        r.err().contains("<stdin>: not valid JSON") && r.err().contains("nesting depth"), r.err());
    assertFalse(r.err().contains("NullPointerException"), r.err());
    assertEquals(1, r.err().lines().count(), r.err());
    Run obj =
        run("{\"sources\": " + "{\"a\": ".repeat(100_000) + "1" + "}".repeat(100_001), "plan", "-");
    assertEquals(1, obj.code());
    assertTrue(obj.err().contains("nesting depth"), obj.err());
  }

  @Test
  void aHugeSegmentThresholdIsBoundedNotAnOutOfMemoryError() {
    // 20 bytes of request, 2^25 single-byte runs once transposed with bounding off
    String req =
        """
        { "max_segments_per_copy": 2147483647,
          "sources": { "w": { "dtype": "u8", "global_shape": [16777216, 2],
            "shards": [ { "session": "a", "addr": 0, "offset": [0, 0], "shape": [16777216, 2] } ] } },
          "copies": [ { "src": "w", "op_chain": [ ["t", []] ], "param": "p",
            "dest_offset": 0, "dest_shape": [2, 16777216], "dest_dtype": "u8" } ] }
        """;
    Run r = run(req, "plan", "-");
    assertEquals(1, r.code());
    assertTrue(
        r.err().contains("needs 33554432 exact descriptors, more than the limit of 2000000"),
        r.err());
    assertEquals(1, r.err().lines().count(), r.err());
    // in shard mode the cost model stages the one shard instead
    Run s = run(req, "plan", "--bounding", "shard", "--summary", "-");
    assertEquals(0, s.code(), s.err());
    assertTrue(
        s.out().lines().anyMatch(l -> l.startsWith("descriptors") && l.contains("1 ")), s.out());
  }

  @Test
  void badModesAreUsageErrors() {
    Run r = run(DIM1, "plan", "--bounding", "shards", "-");
    assertEquals(2, r.code());
    assertTrue(
        r.err().contains("unknown bounding mode 'shards'; expected modelexpress or shard"),
        r.err());
    Run f =
        run(
            DIM1.replaceFirst("\\{ \"sources\"", "{ \"bounding\": \"fast\", \"sources\""),
            "plan",
            "-");
    assertEquals(1, f.code());
    assertTrue(f.err().contains("bounding: unknown bounding mode 'fast'"), f.err());
    assertEquals(2, run(DIM1, "plan", "--max-descriptors", "0", "-").code());
  }

  @Test
  void goldenIndexListsEveryGoldenFile() throws IOException {
    try (Stream<String> lines = resource("index.txt").lines()) {
      assertEquals(25, lines.filter(l -> !l.isBlank()).count());
    }
  }
}
