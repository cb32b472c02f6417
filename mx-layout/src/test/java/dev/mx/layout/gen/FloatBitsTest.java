package dev.mx.layout.gen;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.junit.jupiter.api.Test;

/**
 * The 16-bit conversions against PyTorch's vectors in golden/casts.tsv (copied from
 * /work/shared/golden).
 */
class FloatBitsTest {

  private record Row(String from, String to, long in, long out, int line) {}

  private static List<Row> rows() throws IOException {
    List<Row> rows = new ArrayList<>();
    try (var r =
        new BufferedReader(
            new InputStreamReader(
                Objects.requireNonNull(
                    FloatBitsTest.class.getResourceAsStream("/golden/casts.tsv")),
                StandardCharsets.UTF_8))) {
      String line;
      int n = 0;
      while ((line = r.readLine()) != null) {
        n++;
        if (line.startsWith("#") || line.isBlank()) {
          continue;
        }
        String[] f = line.split("\t");
        rows.add(
            new Row(
                f[0], f[1], Long.parseUnsignedLong(f[2], 16), Long.parseUnsignedLong(f[3], 16), n));
      }
    }
    return rows;
  }

  @Test
  void matchesPyTorchForEveryF32AndHalfRow() throws IOException {
    int checked = 0;
    for (Row row : rows()) {
      String what =
          row.from + "->" + row.to + " line " + row.line + " input " + Long.toHexString(row.in);
      switch (row.from + ">" + row.to) {
        case "f32>bf16" -> {
          float v = Float.intBitsToFloat((int) row.in);
          short got = FloatBits.f32ToBf16(v);
          if (Float.isNaN(v)) {
            assertTrue(Float.isNaN(FloatBits.bf16ToF32(got)), what);
          } else {
            assertEquals(row.out, got & 0xffffL, what);
          }
          checked++;
        }
        case "f32>f16" -> {
          float v = Float.intBitsToFloat((int) row.in);
          short got = FloatBits.f32ToF16(v);
          if (Float.isNaN(v)) {
            assertTrue(Float.isNaN(FloatBits.f16ToF32(got)), what);
          } else {
            assertEquals(row.out, got & 0xffffL, what);
          }
          checked++;
        }
        case "bf16>f32" -> {
          float got = FloatBits.bf16ToF32((short) row.in);
          if (Float.isNaN(got)) {
            assertTrue(Float.isNaN(Float.intBitsToFloat((int) row.out)), what);
          } else {
            assertEquals(row.out, Float.floatToRawIntBits(got) & 0xffffffffL, what);
          }
          checked++;
        }
        case "f16>f32" -> {
          float got = FloatBits.f16ToF32((short) row.in);
          if (Float.isNaN(got)) {
            assertTrue(Float.isNaN(Float.intBitsToFloat((int) row.out)), what);
          } else {
            assertEquals(row.out, Float.floatToRawIntBits(got) & 0xffffffffL, what);
          }
          checked++;
        }
        default -> {}
      }
    }
    assertEquals(43 + 43 + 14 + 14, checked, "rows of casts.tsv checked");
  }

  @Test
  void roundsTiesToEven() {
    // 1 + 2^-8 lies halfway between bf16 1.0 and 1.0078125: even (1.0) wins; 1 + 3·2^-8 rounds up
    // to even.
    assertEquals(0x3f80, FloatBits.f32ToBf16(Float.intBitsToFloat(0x3f808000)) & 0xffff);
    assertEquals(0x3f82, FloatBits.f32ToBf16(Float.intBitsToFloat(0x3f818000)) & 0xffff);
    assertEquals(0x3c00, FloatBits.f32ToF16(1f + 0x1p-11f) & 0xffff);
    assertEquals(0x3c02, FloatBits.f32ToF16(1f + 3 * 0x1p-11f) & 0xffff);
    assertEquals(0x7c00, FloatBits.f32ToF16(70000f) & 0xffff, "f16 overflow is infinity");
    assertEquals(FloatBits.BF16_NAN, FloatBits.f32ToBf16(Float.NaN));
  }
}
