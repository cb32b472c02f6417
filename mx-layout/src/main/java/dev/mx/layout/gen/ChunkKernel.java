package dev.mx.layout.gen;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Writes {@code n} consecutive generator values (flat indices {@code first ... first+n-1} under one
 * key) in a stored dtype to elements {@code at ... at+n-1} of a native segment. Implementations
 * must agree bit for bit with {@link WeightGenerator#valueAt} and {@link FloatBits}.
 */
interface ChunkKernel {

  void f32(MemorySegment out, long at, long key, long first, long n);

  void bf16(MemorySegment out, long at, long key, long first, long n);

  void f16(MemorySegment out, long at, long key, long first, long n);

  void f64(MemorySegment out, long at, long key, long first, long n);

  /**
   * The plain-Java kernel, always available: values go through a small heap chunk and out with one
   * bulk copy, which keeps the per-element loop free of native memory access checks.
   */
  ChunkKernel SCALAR =
      new ChunkKernel() {
        private static final int CHUNK = 4096;

        @Override
        public void f32(MemorySegment out, long at, long key, long first, long n) {
          float[] a = new float[(int) Math.min(CHUNK, n)];
          for (long done = 0; done < n; done += a.length) {
            int m = (int) Math.min(a.length, n - done);
            for (int j = 0; j < m; j++) {
              a[j] = WeightGenerator.valueAt(key, first + done + j);
            }
            MemorySegment.copy(a, 0, out, ValueLayout.JAVA_FLOAT_UNALIGNED, (at + done) * 4, m);
          }
        }

        @Override
        public void bf16(MemorySegment out, long at, long key, long first, long n) {
          shorts(out, at, key, first, n, false);
        }

        @Override
        public void f16(MemorySegment out, long at, long key, long first, long n) {
          shorts(out, at, key, first, n, true);
        }

        private void shorts(
            MemorySegment out, long at, long key, long first, long n, boolean half) {
          short[] a = new short[(int) Math.min(CHUNK, n)];
          for (long done = 0; done < n; done += a.length) {
            int m = (int) Math.min(a.length, n - done);
            for (int j = 0; j < m; j++) {
              float v = WeightGenerator.valueAt(key, first + done + j);
              a[j] = half ? FloatBits.f32ToF16(v) : FloatBits.f32ToBf16(v);
            }
            MemorySegment.copy(a, 0, out, ValueLayout.JAVA_SHORT_UNALIGNED, (at + done) * 2, m);
          }
        }

        @Override
        public void f64(MemorySegment out, long at, long key, long first, long n) {
          double[] a = new double[(int) Math.min(CHUNK, n)];
          for (long done = 0; done < n; done += a.length) {
            int m = (int) Math.min(a.length, n - done);
            for (int j = 0; j < m; j++) {
              a[j] = WeightGenerator.valueAt(key, first + done + j);
            }
            MemorySegment.copy(a, 0, out, ValueLayout.JAVA_DOUBLE_UNALIGNED, (at + done) * 8, m);
          }
        }
      };
}
