package dev.mx.plan;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.plan.OpSpec;
import dev.mx.api.plan.RecordedCopy;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The narrow-only fast path of {@link SliceResolver} agrees with the general replay wherever it
 * answers.
 */
class SliceResolverFastPathTest {

  @Test
  void fastPathEqualsTheGeneralRulesOnRandomNarrowChains() {
    SplittableRandom r = new SplittableRandom(0x5eed_0002L);
    int answered = 0;
    for (int c = 0; c < 5000; c++) {
      int n = 1 + r.nextInt(4);
      long[] g = new long[n];
      for (int d = 0; d < n; d++) {
        g[d] = r.nextInt(4) == 0 ? 1 : 1 + r.nextInt(6);
      }
      long[] lo = new long[n];
      long[] hi = g.clone();
      List<OpSpec> chain = new ArrayList<>();
      for (int k = r.nextInt(4); k > 0; k--) {
        int d = r.nextInt(n);
        long extent = hi[d] - lo[d];
        long start = r.nextLong(extent + 1);
        long length = r.nextLong(extent - start + 1);
        chain.add(OpSpec.narrow(d, start, length));
        lo[d] += start;
        hi[d] = lo[d] + length;
      }
      long[] shape = new long[n];
      for (int d = 0; d < n; d++) {
        shape[d] = hi[d] - lo[d];
      }
      RecordedCopy copy = RecordedCopy.contiguous("w", chain, "p", 0, Shape.of(shape), DType.F32);
      SliceResolver.RawSlice fast = SliceResolver.narrowsOnly(copy, g);
      if (fast == null) {
        continue;
      }
      answered++;
      SliceResolver.RawSlice general = SliceResolver.replayed(copy, g);
      String what = "shape " + java.util.Arrays.toString(g) + " chain " + chain;
      assertArrayEquals(general.lo(), fast.lo(), what);
      assertArrayEquals(general.hi(), fast.hi(), what);
      assertArrayEquals(general.perm(), fast.perm(), what);
      assertArrayEquals(general.destStrideSrc(), fast.destStrideSrc(), what);
    }
    assertTrue(answered > 1500, "fast path answered " + answered);
  }
}
