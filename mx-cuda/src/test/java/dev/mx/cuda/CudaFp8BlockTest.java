package dev.mx.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.refit.cast.BlockQuantizer;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The device FP8 block quantizer equals the CPU one ({@link BlockQuantizer}, itself tested against
 * a from-the-rule reference) byte for byte, codes and scales (GPU only; skips with the cause
 * elsewhere).
 */
class CudaFp8BlockTest {

  @BeforeEach
  void needsCuda() {
    CudaTestSupport.assumeCuda();
  }

  /** Gaussian weights with an outlier, zeros (the amax floor) and f32 subnormals. */
  private static byte[] weights(int n, DType dtype, long seed) {
    SplittableRandom r = new SplittableRandom(seed);
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment s = arena.allocate((long) n * dtype.elementSize());
      for (int i = 0; i < n; i++) {
        float v = (float) (r.nextGaussian() * 0.02);
        if (i % 9973 == 0) {
          v = 3f;
        } else if (i < 700) {
          v = i % 2 == 0 ? 0f : Float.MIN_VALUE * i;
        }
        switch (dtype) {
          case F32 -> s.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i, v);
          case BF16 ->
              s.setAtIndex(
                  ValueLayout.JAVA_SHORT_UNALIGNED, i, dev.mx.refit.cast.Casts.f32ToBf16(v));
          default ->
              s.setAtIndex(
                  ValueLayout.JAVA_SHORT_UNALIGNED, i, dev.mx.refit.cast.Casts.f32ToF16(v));
        }
      }
      return s.toArray(ValueLayout.JAVA_BYTE);
    }
  }

  @Test
  void deviceCodesAndScalesEqualTheCpuQuantizerWithPartialTilesAndStackedExperts() {
    for (DType from : new DType[] {DType.BF16, DType.F16, DType.F32}) {
      for (int block : new int[] {128, 32}) {
        Shape shape = Shape.of(3, 300, 200);
        int n = (int) shape.numel();
        int nScales = (int) BlockQuantizer.scaleShape(shape, block).numel();
        byte[] in = weights(n, from, 7);
        byte[] wantCodes;
        byte[] wantScales;
        try (Arena arena = Arena.ofConfined()) {
          MemorySegment src = arena.allocate(in.length);
          MemorySegment.copy(in, 0, src, ValueLayout.JAVA_BYTE, 0, in.length);
          MemorySegment codes = arena.allocate(n);
          MemorySegment scales = arena.allocate(4L * nScales);
          BlockQuantizer.quantize(src, from, codes, scales, shape, block, false);
          wantCodes = codes.toArray(ValueLayout.JAVA_BYTE);
          wantScales = scales.toArray(ValueLayout.JAVA_BYTE);
        }
        try (DeviceAllocation src = DeviceBuffers.upload(in, 0);
            DeviceAllocation codes = DeviceAllocation.allocate(0, n);
            DeviceAllocation scales = DeviceAllocation.allocate(0, 4L * nScales)) {
          CudaCasts.quantizeFp8Block(
              0,
              src.segment().address(),
              from,
              codes.segment().address(),
              scales.segment().address(),
              shape.dims(),
              block);
          assertArrayEquals(
              wantCodes, DeviceBuffers.download(codes, 0, n), from + " block " + block + " codes");
          assertArrayEquals(
              wantScales,
              DeviceBuffers.download(scales, 0, 4L * nScales),
              from + " block " + block + " scales");
        }
      }
    }
  }
}
