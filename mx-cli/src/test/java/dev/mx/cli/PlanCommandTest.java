package dev.mx.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code mx plan} against the ARCHITECTURE §5.3 contract: input, output, exit codes. */
class PlanCommandTest {

  record Run(int code, String out, String err) {}

  static Run run(String stdin, String... args) {
    PrintStream oldOut = System.out;
    PrintStream oldErr = System.err;
    InputStream oldIn = System.in;
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    try {
      System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
      System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
      if (stdin != null) {
        System.setIn(new ByteArrayInputStream(stdin.getBytes(StandardCharsets.UTF_8)));
      }
      int code = Main.execute(args);
      return new Run(
          code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    } finally {
      System.setOut(oldOut);
      System.setErr(oldErr);
      System.setIn(oldIn);
    }
  }

  /** The example of ARCHITECTURE §5.3 plus a second, unpublished source and a capture failure. */
  private static final String REQUEST =
      """
      { "max_segments_per_copy": 64,
        "sources": { "w": { "dtype": "torch.float32", "global_shape": [4, 8],
            "shards": [ { "session": "a", "addr": 2000, "offset": [0, 0], "shape": [4, 8] } ] } },
        "copies": [
          { "src": "w", "op_chain": [ ["narrow", [1, 0, 4]] ], "param": "p",
            "dest_offset": 0, "dest_shape": [4, 4], "dest_stride": [4, 1], "dest_dtype": "torch.float32" },
          { "src": "w", "op_chain": [ ["getitem", [[2, null]]], ["t", []] ], "param": "q",
            "dest_offset": 0, "dest_shape": [8, 2], "dest_stride": [2, 1], "dest_dtype": "f32" },
          { "src": "gone", "op_chain": [], "param": "r",
            "dest_offset": 0, "dest_shape": [1], "dest_stride": [1], "dest_dtype": "bf16" } ],
        "unsupported": { "odd": "unsupported op 'index_select' on lazy 'odd' (chain=[])" } }
      """;

  @Test
  void planPrintsTheContractJsonFromAFile(@TempDir Path dir) throws Exception {
    Path f = dir.resolve("req.json");
    Files.writeString(f, REQUEST);
    Run r = run(null, "plan", f.toString());
    assertEquals(0, r.code(), r.err());
    JsonNode plan = Json.mapper().readTree(r.out());
    JsonNode segs = plan.get("segments");
    // narrow(1, 0, 4): four 16-byte rows, 32 bytes apart in the source
    for (int i = 0; i < 4; i++) {
      JsonNode s = segs.get(i);
      assertEquals("a", s.get("session").asText());
      assertEquals(2000 + 32 * i, s.get("src_addr").asLong());
      assertEquals("p", s.get("param").asText());
      assertEquals(16 * i, s.get("dst_byte").asLong());
      assertEquals(16, s.get("nbytes").asLong());
    }
    // rows 2..3 transposed: 16 single-element runs into q
    assertEquals(4 + 16, segs.size());
    assertEquals(2000 + 4 * 16, segs.get(4).get("src_addr").asLong());
    // source element (3, 1) is run 9 of q; it lands at q element (1, 1) = 1·2 + 1
    assertEquals(2000 + (3 * 8 + 1) * 4, segs.get(4 + 9).get("src_addr").asLong());
    assertEquals((1 * 2 + 1) * 4, segs.get(4 + 9).get("dst_byte").asLong());
    assertEquals("q", segs.get(4 + 9).get("param").asText());
    assertEquals("[\"odd\",\"gone\"]", plan.get("fallback").toString());
    assertTrue(plan.get("fallback_reasons").get("gone").asText().contains("not published"));
    assertEquals(20, plan.get("exact_descriptor_count").asLong());
    assertEquals(128, plan.get("exact_bytes").asLong());
    assertEquals(20, plan.get("descriptor_count").asLong());
    assertEquals(128, plan.get("bytes_planned").asLong());
    assertEquals(0, plan.get("descriptor_savings").asLong());
    assertEquals(0, plan.get("extra_wire_bytes").asLong());
    assertEquals(0, plan.get("full_pulls").size());
    assertEquals(0, plan.get("converts").size());
    assertEquals(0, plan.get("unbounded_sources").size());
  }

  @Test
  void planReadsStdinAndBoundsWithTheOption() throws Exception {
    Run r = run(REQUEST, "plan", "-", "--max-segments-per-copy", "3");
    assertEquals(0, r.code(), r.err());
    JsonNode plan = Json.mapper().readTree(r.out());
    assertEquals(0, plan.get("segments").size());
    JsonNode full = plan.get("full_pulls").get(0);
    assertEquals("w", full.get("src").asText());
    assertEquals("[4,8]", full.get("global_shape").toString());
    assertEquals("torch.float32", full.get("dtype").asText());
    assertEquals(4, full.get("elsize").asInt());
    assertEquals(128, full.get("segments").get(0).get("nbytes").asLong());
    assertEquals(2, full.get("copies").size());
    JsonNode c0 = full.get("copies").get(0);
    assertEquals("[[\"narrow\",[1,0,4]]]", c0.get("op_chain").toString());
    assertEquals("[4,1]", c0.get("dest_stride").toString());
    assertEquals(1, plan.get("descriptor_count").asLong());
    assertEquals(20, plan.get("exact_descriptor_count").asLong());
    assertEquals(19, plan.get("descriptor_savings").asLong());
    assertEquals(0, plan.get("extra_wire_bytes").asLong());
  }

  @Test
  void summaryPrintsATableWithGroupedCauses() {
    Run r = run(REQUEST, "plan", "--summary", "-");
    assertEquals(0, r.code(), r.err());
    assertTrue(
        r.out().lines().anyMatch(l -> l.startsWith("descriptors") && l.contains("20")), r.out());
    assertTrue(
        r.out().lines().anyMatch(l -> l.startsWith("fallback") && l.contains("2 sources")),
        r.out());
    assertTrue(r.out().contains("unsupported op 'index_select'"), r.out());
    assertTrue(!r.out().contains("on lazy"), r.out());
  }

  /** Amounts read are decimal, as the demo's GB and GB/s are (README, "Units"), not KiB/MiB. */
  @Test
  void summaryAmountsAreDecimalWithTheExactCountBeside() {
    assertEquals("999 B", PlanCommand.bytes(999));
    assertEquals("1.00 kB (1000 B)", PlanCommand.bytes(1000));
    assertEquals("1.50 MB (1500000 B)", PlanCommand.bytes(1_500_000));
    assertEquals("1.24 GB (1240000000 B)", PlanCommand.bytes(1_240_000_000L));
    assertEquals("9223.37 PB (9223372036854775807 B)", PlanCommand.bytes(Long.MAX_VALUE));
  }

  @Test
  void convertsAppearWithTheirWireDtype() throws Exception {
    String req =
        REQUEST.replace(
            "\"dest_stride\": [4, 1], \"dest_dtype\": \"torch.float32\"",
            "\"dest_stride\": [4, 1], \"dest_dtype\": \"torch.bfloat16\"");
    Run r = run(req, "plan", "-");
    assertEquals(0, r.code(), r.err());
    JsonNode conv = Json.mapper().readTree(r.out()).get("converts").get(0);
    assertEquals("p", conv.get("param").asText());
    assertEquals("[4,4]", conv.get("dest_shape").toString());
    assertEquals("torch.float32", conv.get("src_dtype").asText());
    assertEquals(4, conv.get("segments").size());
  }

  @Test
  void badInputExitsOneNamingTheJsonPath() {
    Run r = run(REQUEST.replace("\"offset\": [0, 0]", "\"offset\": [0, \"x\"]"), "plan", "-");
    assertEquals(1, r.code());
    assertTrue(
        r.err().contains("<stdin>: sources.w.shards[0].offset[1]: expected an integer"), r.err());
    assertEquals(1, r.err().lines().count(), r.err());

    r =
        run(
            REQUEST.replace(
                "torch.float32\", \"global_shape\"", "torch.complex64\", \"global_shape\""),
            "plan",
            "-");
    assertEquals(1, r.code());
    assertTrue(r.err().contains("sources.w.dtype: unknown dtype 'torch.complex64'"), r.err());

    r = run(REQUEST.replace("\"shape\": [4, 8] }", "\"shape\": [5, 8] }"), "plan", "-");
    assertEquals(1, r.code());
    assertTrue(r.err().contains("source 'w' shard #0 (session 'a')"), r.err());

    r = run("{\"sources\": {}, \"copis\": []}", "plan", "-");
    assertEquals(1, r.code());
    assertTrue(r.err().contains("copis: unknown key"), r.err());

    r = run("{ not json", "plan", "-");
    assertEquals(1, r.code());
    assertTrue(r.err().contains("not valid JSON"), r.err());
  }

  @Test
  void hugeShapesExitOneWithOneLineNamingTheJsonPath() {
    // Without dest_stride the row-major strides are derived: they used to overflow in a stack
    // trace.
    String huge = "4611686018427387904";
    Run r =
        run(
            REQUEST.replace(
                "\"dest_shape\": [4, 4], \"dest_stride\": [4, 1], ",
                "\"dest_shape\": [" + huge + ", 4], "),
            "plan",
            "-");
    assertEquals(1, r.code(), r.err());
    assertEquals(
        "mx plan: error: <stdin>: copies[0].dest_shape: destination shape ["
            + huge
            + ", 4] of torch.float32 holds more than 2^63-1 bytes",
        r.err().strip());

    // No element at all, but the strides of the inner dims overflow.
    r =
        run(
            REQUEST.replace(
                "\"dest_shape\": [4, 4], \"dest_stride\": [4, 1], ",
                "\"dest_shape\": [0, " + huge + ", 4], "),
            "plan",
            "-");
    assertEquals(1, r.code(), r.err());
    assertEquals(
        "mx plan: error: <stdin>: copies[0].dest_shape: the row-major strides of [0, "
            + huge
            + ", 4] exceed 2^63-1",
        r.err().strip());
  }

  @Test
  void aKeyGivenTwiceExitsOneNamingItsPath() {
    Run r = run("{\"sources\": {}, \"sources\": {}}", "plan", "-");
    assertEquals(1, r.code(), r.err());
    assertEquals(
        "mx plan: error: <stdin>: sources: duplicate key (line 1, column 26)", r.err().strip());

    r =
        run(
            REQUEST.replace(
                "\"session\": \"a\", \"addr\": 2000",
                "\"session\": \"a\", \"addr\": 2000, \"addr\": 0"),
            "plan",
            "-");
    assertEquals(1, r.code(), r.err());
    assertTrue(
        r.err().contains("<stdin>: sources.w.shards[0].addr: duplicate key (line 3"), r.err());
    assertEquals(1, r.err().lines().count(), r.err());
  }

  @Test
  void contentAfterTheDocumentExitsOneNamingThePosition() {
    for (String trailing : List.of(" xyz", " {}", "\n ]", " 1")) {
      Run r = run("{\"sources\": {}}" + trailing, "plan", "-");
      assertEquals(1, r.code(), trailing + ": " + r.err());
      assertEquals(1, r.err().lines().count(), r.err());
      assertTrue(
          r.err().contains("<stdin>: unexpected content after the JSON document (line "),
          trailing + ": " + r.err());
    }
    Run r = run("{\"sources\": {}} xyz", "plan", "-");
    assertTrue(r.err().endsWith("(line 1, column 17)\n"), r.err());
    // Whitespace after the document is fine.
    assertEquals(0, run("{\"sources\": {}}\n\n  ", "plan", "-").code());
  }

  @Test
  void aDirectoryIsNamed(@TempDir Path dir) {
    Run r = run(null, "plan", dir.toString());
    assertEquals(1, r.code(), r.err());
    assertEquals("mx plan: error: cannot read " + dir + ": is a directory", r.err().strip());
  }

  @Test
  void missingFileExitsOneAndBadUsageTwo(@TempDir Path dir) {
    Run r = run(null, "plan", dir.resolve("absent.json").toString());
    assertEquals(1, r.code());
    assertTrue(r.err().contains("absent.json: no such file"), r.err());
    assertEquals(2, run(null, "plan").code());
    assertEquals(2, run(REQUEST, "plan", "-", "--summary", "--json").code());
    assertEquals(2, run(REQUEST, "plan", "-", "--max-segments-per-copy", "0").code());
  }
}
