package dev.mx.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.digest.GoldenVectors;
import dev.mx.digest.safetensors.SafetensorsTensor;
import dev.mx.digest.safetensors.SafetensorsWriter;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code mx digest} run as a real process, as a user (or a test outside the code) would. */
class DigestCommandTest {

  @TempDir Path dir;

  private record Run(int code, List<String> out, String err) {}

  /**
   * Runs {@code dev.mx.cli.Main} in a fresh JVM (like ./mx, but on the test class path) in {@link
   * #dir}.
   */
  private Run mx(String... args) throws IOException, InterruptedException {
    CliProcess.Run r = CliProcess.run(dir, null, args);
    return new Run(r.code(), r.outLines(), r.err());
  }

  @Test
  void printsTheGoldenDigestsForFilesHoldingTheGoldenInputsAndNamesFilesItCannotRead()
      throws Exception {
    // One process for every golden file plus two that fail: the failures are named on stderr, every
    // other
    // file is still digested, and the exit code is 1.
    List<GoldenVectors.Vector> golden = GoldenVectors.all();
    List<String> args = new ArrayList<>(List.of("missing.bin"));
    for (GoldenVectors.Vector v : golden) {
      Files.write(dir.resolve(v.name() + ".bin"), v.input());
      args.add(v.name() + ".bin");
    }
    Files.createDirectory(dir.resolve("sub"));
    args.add("sub");
    Run r = mx(prepend("digest", args));
    List<String> expected =
        golden.stream().map(v -> v.digest() + "  " + v.name() + ".bin").toList();
    assertEquals(expected, r.out());
    assertEquals(1, r.code(), r.err());
    assertTrue(r.err().contains("mx digest: error: missing.bin: no such file"), r.err());
    assertTrue(r.err().contains("mx digest: error: sub: is a directory"), r.err());
  }

  @Test
  void safetensorsPrintsOneLinePerTensorInHeaderOrderAndJsonCarriesTheFields() throws Exception {
    List<SafetensorsTensor> tensors =
        List.of(
            new SafetensorsTensor(
                "z.rows",
                DType.I32,
                Shape.of(2, 1024),
                MemorySegment.ofArray(GoldenVectors.input("i32-arange-2048"))),
            new SafetensorsTensor(
                "a.bytes",
                DType.U8,
                Shape.of(10),
                MemorySegment.ofArray(GoldenVectors.input("bytes-0-9"))),
            new SafetensorsTensor(
                "m.ragged",
                DType.BF16,
                Shape.of(3),
                MemorySegment.ofArray(GoldenVectors.input("bf16-zeros-3"))));
    SafetensorsWriter.write(dir.resolve("w.safetensors"), tensors, Map.of("format", "pt"));
    Run r = mx("digest", "--safetensors", "w.safetensors");
    assertEquals(0, r.code(), r.err());
    assertEquals(
        List.of(
            "b9cde3b2b8f19d696752d9c2d6e9d54d  w.safetensors:z.rows",
            "1ad7cf339325676cba44326a8fe0a055  w.safetensors:a.bytes",
            "91628a11eb0d46f352c30ba0363ca460  w.safetensors:m.ragged"),
        r.out());

    Run json = mx("digest", "--json", "--safetensors", "w.safetensors");
    assertEquals(0, json.code(), json.err());
    JsonNode list = Json.mapper().readTree(String.join("\n", json.out()));
    assertEquals(3, list.size());
    assertEquals("z.rows", list.get(0).get("tensor").asText());
    assertEquals("I32", list.get(0).get("dtype").asText());
    assertEquals(1024, list.get(0).get("shape").get(1).asInt());
    assertEquals(8192, list.get(0).get("bytes").asLong());
    assertEquals("b9cde3b2b8f19d696752d9c2d6e9d54d", list.get(0).get("digest").asText());
  }

  @Test
  void aMalformedSafetensorsFileExitsOneNamingFileAndTensor() throws Exception {
    String header = "{\"w\": {\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}";
    byte[] json = header.getBytes(StandardCharsets.UTF_8);
    byte[] file = new byte[8 + json.length + 8];
    file[0] = (byte) json.length;
    System.arraycopy(json, 0, file, 8, json.length);
    Files.write(dir.resolve("short.safetensors"), file);
    Run r = mx("digest", "--safetensors", "short.safetensors");
    assertEquals(1, r.code(), r.err());
    assertEquals(List.of(), r.out());
    assertTrue(
        r.err().contains("mx digest: error: short.safetensors: tensor 'w': data_offsets [0, 16]"),
        r.err());
  }

  @Test
  void badUsageExitsTwo() {
    // In process: only the exit code matters here.
    assertEquals(2, Main.execute("digest"));
    assertEquals(2, Main.execute("digest", "--threads", "-1", "x"));
    assertEquals(2, Main.execute("digest", "--no-such-option", "x"));
  }

  private static String[] prepend(String first, List<String> rest) {
    List<String> all = new ArrayList<>();
    all.add(first);
    all.addAll(rest);
    return all.toArray(String[]::new);
  }
}
