package dev.mx.layout.gen;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The generator of ARCHITECTURE §5.4. Known values were computed with an independent Python
 * implementation of the formula (arbitrary-precision integers masked to 64 bits; numpy for f16).
 */
class WeightGeneratorTest {

  @Test
  void hashesMatchTheirReferenceVectors() {
    assertEquals(0xcbf29ce484222325L, WeightGenerator.fnv1a64(""));
    assertEquals(0xaf63dc4c8601ec8cL, WeightGenerator.fnv1a64("a"));
    assertEquals(0xa88fd795d5c6d156L, WeightGenerator.fnv1a64("model.embed_tokens.weight"));
    assertEquals(0xe220a8397b1dcdafL, WeightGenerator.splitmix64(0));
    assertEquals(0x910a2dec89025cc1L, WeightGenerator.splitmix64(1));
  }

  private record Known(
      String name, long step, long index, int scaled, int f32, int bf16, int f16) {}

  private static final List<Known> KNOWN =
      List.of(
          new Known("model.embed_tokens.weight", 0, 0, -2159388, 0xbe03cc70, 0xbe04, 0xb01e),
          new Known("model.embed_tokens.weight", 0, 1, -2489614, 0xbe17f438, 0xbe18, 0xb0c0),
          new Known("model.embed_tokens.weight", 3, 12345, 4699477, 0x3e8f6aaa, 0x3e8f, 0x347b),
          new Known(
              "model.layers.0.self_attn.q_proj.weight",
              7,
              (1L << 40) + 17,
              2774979,
              0x3e295f0c,
              0x3e29,
              0x314b),
          new Known("lm_head.weight", 1, 999, -7112839, 0xbed9110e, 0xbed9, 0xb6c9));

  @Test
  void knownValuesInEveryStoredDtype() {
    for (Known k : KNOWN) {
      float v = WeightGenerator.value(k.name, k.step, k.index);
      String what = k.name + " step " + k.step + " index " + k.index;
      assertEquals(k.scaled * 0x1p-24f, v, what);
      assertEquals(
          k.f32 & 0xffffffffL,
          WeightGenerator.storedBits(k.name, k.step, k.index, DType.F32),
          what);
      assertEquals(k.bf16, WeightGenerator.storedBits(k.name, k.step, k.index, DType.BF16), what);
      assertEquals(k.f16, WeightGenerator.storedBits(k.name, k.step, k.index, DType.F16), what);
      assertEquals(
          Double.doubleToRawLongBits(v),
          WeightGenerator.storedBits(k.name, k.step, k.index, DType.F64),
          what);
    }
  }

  @Test
  void valuesAreExactMultiplesOfTwoToTheMinus24InTheHalfOpenUnitInterval() {
    long key = WeightGenerator.key("model.norm.weight", 5);
    for (long i = 0; i < 100_000; i++) {
      float v = WeightGenerator.valueAt(key, i);
      float scaled = v * 0x1p24f;
      if (!(v >= -0.5f && v < 0.5f) || Math.rint(scaled) != scaled) {
        fail("value " + v + " at " + i + " is outside [-0.5, 0.5) or not a multiple of 2^-24");
      }
    }
  }

  @Test
  void vectorKernelAgreesWithTheScalarKernelBitForBit() {
    org.junit.jupiter.api.Assumptions.assumeTrue(
        ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent(),
        "module jdk.incubator.vector is not resolved (the surefire argLine adds it)");
    ChunkKernel v = new VectorChunkKernel();
    long key = WeightGenerator.key("model.layers.7.mlp.experts.3.up_proj.weight", 11);
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment a = arena.allocate(8 * 5000);
      MemorySegment b = arena.allocate(8 * 5000);
      for (long first : new long[] {0, 1, 4093, (1L << 40) + 3, Long.MAX_VALUE - 5000}) {
        for (int n : new int[] {0, 1, 7, 8, 9, 31, 4096}) {
          for (DType dtype : List.of(DType.F32, DType.BF16, DType.F16, DType.F64)) {
            a.fill((byte) 0x55);
            b.fill((byte) 0x55);
            write(v, dtype, a, first, n, key);
            write(ChunkKernel.SCALAR, dtype, b, first, n, key);
            assertEquals(-1, a.mismatch(b), dtype + " first " + first + " n " + n);
          }
        }
      }
    }
  }

  /** Writes at element 3, so that stores are unaligned. */
  private static void write(
      ChunkKernel k, DType dtype, MemorySegment out, long first, int n, long key) {
    switch (dtype) {
      case F32 -> k.f32(out, 3, key, first, n);
      case BF16 -> k.bf16(out, 3, key, first, n);
      case F16 -> k.f16(out, 3, key, first, n);
      default -> k.f64(out, 3, key, first, n);
    }
  }

  @Test
  void theVectorKernelCanBeSwitchedOffAndSaysWhy() {
    // The surefire argLine sets -Dmx.gen.vector=false.
    assertTrue(!WeightGenerator.vectorized());
    assertTrue(WeightGenerator.vectorUnavailabilityCause().getMessage().contains("mx.gen.vector"));
  }

  @Test
  void stepsChangeValues() {
    assertTrue(WeightGenerator.value("x", 0, 3) != WeightGenerator.value("x", 1, 3));
  }

  @Test
  void fillsABoxOfA3dTensorWithTheGlobalElementsItHolds() {
    Shape global = Shape.of(5, 6, 7);
    long[] offset = {1, 2, 0};
    Shape box = Shape.of(3, 4, 7); // the whole last dim, part of dim 1: runs of 28 elements
    for (DType dtype : List.of(DType.F32, DType.BF16, DType.F16, DType.F64)) {
      try (Arena arena = Arena.ofConfined()) {
        MemorySegment seg = arena.allocate(box.byteSize(dtype.elementSize()));
        WeightGenerator.fill(new BoxFill(seg, dtype, "t", global, offset, box), 9);
        long i = 0;
        for (int a = 0; a < 3; a++) {
          for (int b = 0; b < 4; b++) {
            for (int c = 0; c < 7; c++, i++) {
              long flat = ((1 + a) * 6L + (2 + b)) * 7 + c;
              assertEquals(
                  WeightGenerator.storedBits("t", 9, flat, dtype),
                  FloatBits.bitsAt(seg, i, dtype),
                  dtype + " at " + a + "," + b + "," + c);
            }
          }
        }
      }
    }
  }

  @Test
  void parallelFillEqualsSequentialFillAcrossManyBoxes() {
    try (Arena arena = Arena.ofShared()) {
      Shape global = Shape.of(3000, 257);
      // Shared memory, so that the pool threads may write it.
      List<BoxFill> fills = new ArrayList<>();
      List<BoxFill> reference = new ArrayList<>();
      for (int k = 0; k < 3; k++) {
        long[] off = {k * 1000L, k == 2 ? 1 : 0};
        Shape box = Shape.of(1000, k == 2 ? 256 : 257);
        fills.add(
            new BoxFill(arena.allocate(box.byteSize(2)), DType.BF16, "w" + k, global, off, box));
        reference.add(
            new BoxFill(arena.allocate(box.byteSize(2)), DType.BF16, "w" + k, global, off, box));
      }
      WeightGenerator.fill(fills, 4, 4);
      for (BoxFill r : reference) {
        WeightGenerator.fill(r, 4);
      }
      for (int k = 0; k < 3; k++) {
        assertEquals(-1, fills.get(k).target().mismatch(reference.get(k).target()), "box " + k);
      }
    }
  }

  @Test
  void confinedTargetsAreFilledOnTheCallingThread() {
    try (Arena arena = Arena.ofConfined()) {
      Shape global = Shape.of(1 << 20);
      BoxFill f =
          new BoxFill(
              arena.allocate(global.byteSize(4)), DType.F32, "c", global, new long[] {0}, global);
      WeightGenerator.fill(List.of(f), 2, 4);
      assertEquals(
          WeightGenerator.storedBits("c", 2, (1 << 20) - 1, DType.F32),
          FloatBits.bitsAt(f.target(), (1 << 20) - 1, DType.F32));
    }
  }

  @Test
  void rejectsBoxesOutsideTheTensorOrTargetsOfTheWrongSize() {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment seg = arena.allocate(16);
      var outside =
          assertThrows(
              IllegalArgumentException.class,
              () -> new BoxFill(seg, DType.F32, "t", Shape.of(4), new long[] {2}, Shape.of(4)));
      assertTrue(outside.getMessage().contains("'t'"), outside.getMessage());
      var size =
          assertThrows(
              IllegalArgumentException.class,
              () -> new BoxFill(seg, DType.F32, "t", Shape.of(8), new long[] {0}, Shape.of(8)));
      assertTrue(size.getMessage().contains("16 bytes"), size.getMessage());
      assertThrows(
          IllegalArgumentException.class,
          () -> new BoxFill(seg, DType.I32, "t", Shape.of(4), new long[] {0}, Shape.of(4)));
    }
  }
}
