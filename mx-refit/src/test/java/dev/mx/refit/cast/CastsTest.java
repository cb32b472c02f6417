package dev.mx.refit.cast;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class CastsTest {

  private record Golden(DType from, DType to, long in, long out, int line) {}

  private static List<Golden> golden() throws IOException {
    List<Golden> rows = new ArrayList<>();
    try (InputStream in = CastsTest.class.getResourceAsStream("/casts.tsv");
        BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
      String line;
      int n = 0;
      while ((line = r.readLine()) != null) {
        n++;
        if (line.startsWith("#") || line.isBlank()) {
          continue;
        }
        String[] f = line.split("\t");
        rows.add(
            new Golden(
                DType.parse(f[0]),
                DType.parse(f[1]),
                Long.parseUnsignedLong(f[2], 16),
                Long.parseUnsignedLong(f[3], 16),
                n));
      }
    }
    return rows;
  }

  private static boolean isNaN(long bits, DType t) {
    return switch (t) {
      case F64 -> Double.isNaN(Double.longBitsToDouble(bits));
      case F32 -> Float.isNaN(Float.intBitsToFloat((int) bits));
      case BF16 -> Float.isNaN(Casts.bf16ToF32((short) bits));
      case F16 -> Float.isNaN(Casts.f16ToF32((short) bits));
      default -> Float.isNaN(Casts.fp8(t).toFloat((int) bits));
    };
  }

  @Test
  void everyGoldenRowMatchesPyTorchScalar() throws IOException {
    List<Golden> rows = golden();
    assertEquals(201, rows.size(), "rows in casts.tsv");
    for (Golden g : rows) {
      long got = Casts.convertBits(g.in(), g.from(), g.to());
      String where =
          "casts.tsv line "
              + g.line()
              + ": "
              + g.from()
              + " "
              + Long.toHexString(g.in())
              + " -> "
              + g.to();
      if (isNaN(g.in(), g.from())) {
        assertTrue(isNaN(got, g.to()), where + " must stay NaN, got " + Long.toHexString(got));
      } else {
        assertEquals(
            g.out(),
            got,
            where + ": expected " + Long.toHexString(g.out()) + ", got " + Long.toHexString(got));
      }
    }
  }

  /**
   * The same rows through the bulk kernel, contiguous and strided, so the vector-friendly loops are
   * covered.
   */
  @Test
  void everyGoldenRowMatchesPyTorchInBulk() throws IOException {
    List<Golden> rows = golden();
    try (Arena arena = Arena.ofConfined()) {
      for (DType from : DType.values()) {
        for (DType to : DType.values()) {
          List<Golden> pair = rows.stream().filter(g -> g.from() == from && g.to() == to).toList();
          if (pair.isEmpty()) {
            continue;
          }
          for (int stride : new int[] {1, 3}) {
            MemorySegment src =
                arena.allocate((long) pair.size() * stride * from.elementSize() + 8);
            MemorySegment dst = arena.allocate((long) pair.size() * stride * to.elementSize() + 8);
            for (int i = 0; i < pair.size(); i++) {
              put(src, (long) i * stride * from.elementSize(), from, pair.get(i).in());
            }
            Casts.convert(
                src,
                0,
                (long) stride * from.elementSize(),
                from,
                dst,
                0,
                (long) stride * to.elementSize(),
                to,
                pair.size());
            for (int i = 0; i < pair.size(); i++) {
              Golden g = pair.get(i);
              long got = get(dst, (long) i * stride * to.elementSize(), to);
              if (isNaN(g.in(), from)) {
                assertTrue(isNaN(got, to), "line " + g.line());
              } else {
                assertEquals(g.out(), got, "line " + g.line() + " stride " + stride);
              }
            }
          }
        }
      }
    }
  }

  private static void put(MemorySegment s, long off, DType t, long bits) {
    switch (t.elementSize()) {
      case 1 -> s.set(ValueLayout.JAVA_BYTE, off, (byte) bits);
      case 2 -> s.set(ValueLayout.JAVA_SHORT_UNALIGNED, off, (short) bits);
      case 4 -> s.set(ValueLayout.JAVA_INT_UNALIGNED, off, (int) bits);
      default -> s.set(ValueLayout.JAVA_LONG_UNALIGNED, off, bits);
    }
  }

  private static long get(MemorySegment s, long off, DType t) {
    return switch (t.elementSize()) {
      case 1 -> s.get(ValueLayout.JAVA_BYTE, off) & 0xFFL;
      case 2 -> s.get(ValueLayout.JAVA_SHORT_UNALIGNED, off) & 0xFFFFL;
      case 4 -> s.get(ValueLayout.JAVA_INT_UNALIGNED, off) & 0xFFFF_FFFFL;
      default -> s.get(ValueLayout.JAVA_LONG_UNALIGNED, off);
    };
  }

  private static long f32(float f) {
    return Float.floatToRawIntBits(f) & 0xFFFF_FFFFL;
  }

  /** Hand-computed OCP FP8 encodings from f32: {value, e4m3fn code, e5m2 code}. */
  @Test
  void fp8EncodingTable() {
    double sub4 = Math.scalb(1.0, -9); // e4m3fn smallest subnormal
    double sub5 = Math.scalb(1.0, -16); // e5m2 smallest subnormal
    Object[][] e4m3 = {
      {0.0f, 0x00},
      {-0.0f, 0x80},
      {1.0f, 0x38},
      {-1.0f, 0xB8},
      {(float) sub4, 0x01},
      {(float) (sub4 / 2), 0x00},
      {(float) (sub4 * 0.75), 0x01},
      {(float) (sub4 * 1.5), 0x02},
      {(float) (sub4 * 2.5), 0x02},
      {(float) (sub4 * 7), 0x07},
      {(float) Math.scalb(1.0, -6), 0x08},
      {1.0625f, 0x38},
      {1.1875f, 0x3A},
      {0.1f, 0x1D},
      {448f, 0x7E},
      {-448f, 0xFE},
      {464f, 0x7E},
      {465f, 0x7F},
      {480f, 0x7F},
      {1e6f, 0x7F},
      {Float.POSITIVE_INFINITY, 0x7F},
      {Float.NEGATIVE_INFINITY, 0xFF},
      {Float.NaN, 0x7F},
      {Float.MIN_VALUE, 0x00},
    };
    for (Object[] row : e4m3) {
      float v = (Float) row[0];
      assertEquals(
          (long) (Integer) row[1],
          Casts.convertBits(f32(v), DType.F32, DType.F8_E4M3FN),
          "e4m3fn(" + v + ")");
    }
    Object[][] e5m2 = {
      {0.0f, 0x00},
      {-0.0f, 0x80},
      {1.0f, 0x3C},
      {-2.0f, 0xC0},
      {(float) sub5, 0x01},
      {(float) (sub5 / 2), 0x00},
      {(float) (sub5 * 1.5), 0x02},
      {(float) (sub5 * 3), 0x03},
      {(float) Math.scalb(1.0, -14), 0x04},
      {1.125f, 0x3C},
      {1.375f, 0x3E},
      {57344f, 0x7B},
      {60000f, 0x7B},
      {61440f, 0x7C},
      {65536f, 0x7C},
      {-1e9f, 0xFC},
      {Float.POSITIVE_INFINITY, 0x7C},
      {Float.NEGATIVE_INFINITY, 0xFC},
      {Float.NaN, 0x7F},
    };
    for (Object[] row : e5m2) {
      float v = (Float) row[0];
      assertEquals(
          (long) (Integer) row[1],
          Casts.convertBits(f32(v), DType.F32, DType.F8_E5M2),
          "e5m2(" + v + ")");
    }
    // bf16 goes through f32 exactly: 1.0 and 448 in bf16.
    assertEquals(0x38L, Casts.convertBits(0x3F80, DType.BF16, DType.F8_E4M3FN));
    assertEquals(0x43E0L, Casts.convertBits(0x7E, DType.F8_E4M3FN, DType.BF16));
    assertEquals(0x7FC0L, Casts.convertBits(0x7F, DType.F8_E4M3FN, DType.BF16));
    assertEquals(0x7F80L, Casts.convertBits(0x7C, DType.F8_E5M2, DType.BF16));
  }

  @Test
  void fp8DecodingTable() {
    assertTrue(Float.isNaN(MiniFloat.E4M3FN.toFloat(0x7F)));
    assertTrue(Float.isNaN(MiniFloat.E4M3FN.toFloat(0xFF)));
    assertEquals(448f, MiniFloat.E4M3FN.toFloat(0x7E));
    assertEquals((float) Math.scalb(1.0, -9), MiniFloat.E4M3FN.toFloat(0x01));
    assertEquals((float) Math.scalb(1.0, -6), MiniFloat.E4M3FN.toFloat(0x08));
    assertEquals(-1f, MiniFloat.E4M3FN.toFloat(0xB8));
    assertEquals(Float.POSITIVE_INFINITY, MiniFloat.E5M2.toFloat(0x7C));
    assertEquals(Float.NEGATIVE_INFINITY, MiniFloat.E5M2.toFloat(0xFC));
    assertTrue(Float.isNaN(MiniFloat.E5M2.toFloat(0x7D)));
    assertEquals(57344f, MiniFloat.E5M2.toFloat(0x7B));
    assertEquals((float) Math.scalb(1.0, -16), MiniFloat.E5M2.toFloat(0x01));
  }

  /**
   * Against a brute-force reference: the nearest finite code by value, ties to the even code;
   * beyond the largest finite value by at least half a step, the overflow code.
   */
  @Test
  void fp8MatchesNearestEvenReferenceOnRandomValues() {
    Random rnd = new Random(7);
    for (MiniFloat fmt : new MiniFloat[] {MiniFloat.E4M3FN, MiniFloat.E5M2}) {
      for (int i = 0; i < 20_000; i++) {
        float v = (float) (rnd.nextGaussian() * Math.scalb(1.0, rnd.nextInt(40) - 20));
        assertEquals(reference(fmt, v), fmt.fromFloat(v), fmt + "(" + v + ")");
      }
      for (int code = 0; code < 256; code++) {
        float v = fmt.toFloat(code);
        if (!Float.isNaN(v)) {
          assertEquals(code, fmt.fromFloat(v), fmt + " round trip of code " + code);
        }
      }
    }
  }

  private static int reference(MiniFloat fmt, float v) {
    int sign = v < 0 || (v == 0 && 1 / v < 0) ? 0x80 : 0;
    double a = Math.abs((double) v);
    int best = -1;
    double bestErr = Double.MAX_VALUE;
    double maxFinite = 0;
    int maxCode = 0;
    for (int code = 0; code < 0x80; code++) {
      float d = fmt.toFloat(code);
      if (Float.isNaN(d) || Float.isInfinite(d)) {
        continue;
      }
      if (d > maxFinite) {
        maxFinite = d;
        maxCode = code;
      }
      double err = Math.abs(d - a);
      if (err < bestErr || (err == bestErr && (code & 1) == 0)) {
        bestErr = err;
        best = code;
      }
    }
    // The step above max finite is the step just below it; at or past half of it the value
    // overflows.
    double step = maxFinite - fmt.toFloat(maxCode - 1);
    if (a > maxFinite
        && (a - maxFinite > step / 2 || (a - maxFinite == step / 2 && (maxCode & 1) == 1))) {
      return sign | fmt.fromFloat(Float.POSITIVE_INFINITY);
    }
    return sign | best;
  }

  @Test
  void f16AndBf16KeepSubnormalsAndOverflowToInfinity() {
    assertEquals(
        0x0001L, Casts.convertBits(f32((float) Math.scalb(1.0, -24)), DType.F32, DType.F16));
    assertEquals(0x7C00L, Casts.convertBits(f32(65520f), DType.F32, DType.F16));
    assertEquals(0x7BFFL, Casts.convertBits(f32(65519f), DType.F32, DType.F16));
    assertEquals(0x0001L, Casts.convertBits(0x00010000L, DType.F32, DType.BF16));
    assertEquals(0x7F80L, Casts.convertBits(f32(Float.MAX_VALUE), DType.F32, DType.BF16));
  }

  @Test
  void rejectsNonFloatPairsAndRunsOutsideTheSegment() {
    assertFalse(Casts.supports(DType.I32, DType.F32));
    assertTrue(Casts.supports(DType.I32, DType.I32));
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment s = arena.allocate(16);
      assertThrows(
          IllegalArgumentException.class, () -> Casts.convert(s, 0, DType.I32, s, 0, DType.F32, 1));
      IndexOutOfBoundsException e =
          assertThrows(
              IndexOutOfBoundsException.class,
              () -> Casts.convert(s, 0, DType.F32, s, 0, DType.F64, 3));
      assertTrue(e.getMessage().contains("destination"), e.getMessage());
    }
  }
}
