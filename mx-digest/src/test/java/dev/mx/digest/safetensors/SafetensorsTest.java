package dev.mx.digest.safetensors;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The safetensors reader and writer: a round trip, header order, and every malformed-file case. */
class SafetensorsTest {

  @TempDir Path dir;

  @Test
  void writeThenReadRoundTripsNamesDtypesShapesBytesAndMetadata() throws IOException {
    Random random = new Random(14);
    try (Arena arena = Arena.ofConfined()) {
      List<SafetensorsTensor> written =
          List.of(
              tensor(
                  arena,
                  random,
                  "model.layers.0.self_attn.qkv_proj.weight",
                  DType.BF16,
                  Shape.of(6, 5)),
              tensor(arena, random, "a.scalar", DType.I64, Shape.of(new long[0])),
              tensor(arena, random, "empty", DType.F32, Shape.of(0, 3)),
              tensor(arena, random, "rows", DType.I32, Shape.of(2048)),
              tensor(arena, random, "odd", DType.U8, Shape.of(7)));
      Path file = dir.resolve("round.safetensors");
      SafetensorsWriter.write(file, written, Map.of("format", "pt"));
      try (SafetensorsFile read = SafetensorsFile.open(file)) {
        assertEquals(Map.of("format", "pt"), read.metadata());
        assertEquals(0, read.dataStart() % 8, "data aligned to 8 bytes");
        assertEquals(written.size(), read.tensors().size());
        for (int i = 0; i < written.size(); i++) {
          SafetensorsTensor w = written.get(i);
          SafetensorsTensor r = read.tensors().get(i);
          assertEquals(w.name(), r.name());
          assertEquals(w.dtype(), r.dtype());
          assertEquals(w.shape(), r.shape());
          assertArrayEquals(
              w.data().toArray(ValueLayout.JAVA_BYTE),
              r.data().toArray(ValueLayout.JAVA_BYTE),
              w.name());
          assertTrue(r.data().isReadOnly(), "mapped read-only");
          assertTrue(r.data().isNative(), "mapped, not copied to the heap");
        }
        assertEquals(written.get(3).shape(), read.tensor("rows").shape());
        SafetensorsException missing =
            assertThrows(SafetensorsException.class, () -> read.tensor("nope"));
        assertTrue(
            missing.getMessage().contains(file.toString())
                && missing.getMessage().contains("'nope'"));
      }
    }
  }

  @Test
  void tensorsKeepHeaderOrderAndCloseIsIdempotent() throws IOException {
    List<String> names = List.of("zeta", "alpha", "mu", "beta");
    List<SafetensorsTensor> written = new ArrayList<>();
    for (String n : names) {
      written.add(
          new SafetensorsTensor(
              n,
              DType.F16,
              Shape.of(3),
              MemorySegment.ofArray(new byte[] {1, 2, 3, 4, 5, (byte) n.length()})));
    }
    Path file = dir.resolve("order.safetensors");
    SafetensorsWriter.write(file, written, Map.of());
    SafetensorsFile read = SafetensorsFile.open(file);
    assertEquals(names, read.tensors().stream().map(SafetensorsTensor::name).toList());
    assertEquals(Map.of(), read.metadata());
    MemorySegment data = read.tensors().get(0).data();
    read.close();
    read.close();
    assertThrows(
        IllegalStateException.class, () -> data.get(ValueLayout.JAVA_BYTE, 0), "unmapped on close");
  }

  @Test
  void writerRejectsRepeatedAndReservedNamesAndWrongSizes() {
    SafetensorsTensor t =
        new SafetensorsTensor("x", DType.U8, Shape.of(1), MemorySegment.ofArray(new byte[1]));
    assertThrows(
        IllegalArgumentException.class,
        () -> SafetensorsWriter.write(dir.resolve("dup.safetensors"), List.of(t, t), Map.of()));
    SafetensorsTensor reserved =
        new SafetensorsTensor(
            SafetensorsFile.METADATA_KEY,
            DType.U8,
            Shape.of(1),
            MemorySegment.ofArray(new byte[1]));
    assertThrows(
        IllegalArgumentException.class,
        () ->
            SafetensorsWriter.write(
                dir.resolve("reserved.safetensors"), List.of(reserved), Map.of()));
    IllegalArgumentException size =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                new SafetensorsTensor(
                    "w", DType.F32, Shape.of(2, 2), MemorySegment.ofArray(new byte[15])));
    assertTrue(
        size.getMessage().contains("'w'") && size.getMessage().contains("needs 16"),
        size.getMessage());
    assertTrue(List.of(dir.toFile().list()).isEmpty(), "no file or temporary left behind");
  }

  @Test
  void truncatedFilesAreRejectedNamingTheFile() throws IOException {
    assertRejected(new byte[0], null, "truncated");
    assertRejected(new byte[5], null, "truncated");
    assertRejected(file(30, "{}", 0), null, "truncated");
  }

  @Test
  void aHeaderOverOneHundredMegabytesIsRejected() throws IOException {
    assertRejected(file(100_000_001L, "{}", 0), null, "exceeds the limit of 100000000 bytes");
    assertRejected(file(-1L, "{}", 0), null, "header length 18446744073709551615 exceeds");
  }

  @Test
  void malformedHeadersAreRejected() throws IOException {
    assertRejected(header("{\"a\": {\"dtype\": \"F32\"", 0), null, "malformed header JSON");
    assertRejected(header("[1, 2]", 0), null, "not a JSON object");
    assertRejected(header("{} {}", 0), null, "malformed header JSON");
    assertRejected(
        header(
            "{\"t\": {\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
                + " \"t\": {\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}",
            2),
        null,
        "Duplicate field 't'");
    assertRejected(header("{\"__metadata__\": [1]}", 0), null, "__metadata__ is not a JSON object");
    assertRejected(
        header("{\"__metadata__\": {\"step\": 3}}", 0), null, "__metadata__.step is not a string");
  }

  @Test
  void badTensorEntriesAreRejectedNamingTheTensor() throws IOException {
    assertRejected(header("{\"w\": 3}", 0), "w", "not a JSON object");
    assertRejected(header("{\"w\": {\"shape\":[1],\"data_offsets\":[0,4]}}", 4), "w", "\"dtype\"");
    assertRejected(entry("\"Q7\"", "[1]", "[0,4]", 4), "w", "unsupported dtype 'Q7'");
    assertRejected(entry("\"F32\"", "[-1]", "[0,4]", 4), "w", "\"shape\"");
    assertRejected(entry("\"F32\"", "\"1\"", "[0,4]", 4), "w", "\"shape\"");
    assertRejected(entry("\"F32\"", "[1.5]", "[0,4]", 4), "w", "\"shape\"");
    assertRejected(entry("\"F32\"", "[1]", "[0]", 4), "w", "\"data_offsets\"");
  }

  @Test
  void offsetsOutsideTheFileOverlapsAndWrongSizesAreRejected() throws IOException {
    assertRejected(entry("\"F32\"", "[2]", "[0,8]", 7), "w", "outside the 7 data bytes");
    assertRejected(entry("\"F32\"", "[0]", "[4,0]", 8), "w", "outside");
    assertRejected(
        entry("\"F32\"", "[2]", "[0,4]", 8), "w", "hold 4 bytes but shape [2] of F32 needs 8");
    assertRejected(entry("\"F32\"", "[4611686018427387904, 4]", "[0,8]", 8), "w", "overflows");
    assertRejected(
        header(
            "{\"a\": {\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                + " \"b\": {\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
            12),
        "b",
        "overlap those of tensor 'a'");
  }

  @Test
  void gapsAndEmptyTensorsAtTheSameOffsetAreAccepted() throws IOException {
    byte[] bytes =
        header(
            "{\"a\": {\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]},"
                + " \"e\": {\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[1,1]},"
                + " \"b\": {\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[4,6]}}",
            8);
    try (SafetensorsFile f = SafetensorsFile.parse(MemorySegment.ofArray(bytes), "in-memory")) {
      assertEquals(
          List.of("a", "e", "b"), f.tensors().stream().map(SafetensorsTensor::name).toList());
      assertEquals(0, f.tensor("e").byteSize());
    }
  }

  private void assertRejected(byte[] bytes, String tensor, String problem) throws IOException {
    Path file = dir.resolve("bad-" + System.nanoTime() + ".safetensors");
    Files.write(file, bytes);
    SafetensorsException e =
        assertThrows(SafetensorsException.class, () -> SafetensorsFile.open(file).close());
    assertTrue(e.getMessage().startsWith(file.toString() + ": "), e.getMessage());
    assertTrue(e.getMessage().contains(problem), e.getMessage());
    assertEquals(tensor, e.tensor(), e.getMessage());
    if (tensor != null) {
      assertTrue(e.getMessage().contains("tensor '" + tensor + "'"), e.getMessage());
    }
  }

  /**
   * A file whose header length field says {@code headerLength} but holds {@code json} and {@code
   * data} zeros.
   */
  private static byte[] file(long headerLength, String json, int data) {
    byte[] j = json.getBytes(StandardCharsets.UTF_8);
    return ByteBuffer.allocate(8 + j.length + data)
        .order(ByteOrder.LITTLE_ENDIAN)
        .putLong(headerLength)
        .put(j)
        .array();
  }

  /** A file with one tensor {@code w} whose fields are the given JSON texts. */
  private static byte[] entry(String dtype, String shape, String offsets, int data) {
    return header(
        "{\"w\": {\"dtype\":"
            + dtype
            + ",\"shape\":"
            + shape
            + ",\"data_offsets\":"
            + offsets
            + "}}",
        data);
  }

  private static byte[] header(String json, int data) {
    return file(json.getBytes(StandardCharsets.UTF_8).length, json, data);
  }

  private static SafetensorsTensor tensor(
      Arena arena, Random random, String name, DType dtype, Shape shape) {
    MemorySegment data =
        arena
            .allocate(Math.max(1, shape.byteSize(dtype.elementSize())))
            .asSlice(0, shape.byteSize(dtype.elementSize()));
    for (long i = 0; i < data.byteSize(); i++) {
      data.set(ValueLayout.JAVA_BYTE, i, (byte) random.nextInt());
    }
    return new SafetensorsTensor(name, dtype, shape, data);
  }
}
