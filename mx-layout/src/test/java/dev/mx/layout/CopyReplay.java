package dev.mx.layout;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.mx.api.Shape;
import dev.mx.api.plan.OpSpec;
import dev.mx.api.plan.RecordedCopy;

/**
 * A test double of the planner's view algebra for the copies mx-layout emits: replays a copy whose
 * op chain is made of {@code narrow} ops element by element, in row-major order of the destination
 * shape.
 */
public final class CopyReplay {

  /** Receives one element: its flat index in the parameter and in the global source tensor. */
  public interface ElementSink {
    void accept(long destFlat, long srcFlat);
  }

  private CopyReplay() {}

  public static void replay(RecordedCopy c, Shape global, ElementSink sink) {
    long[] start = new long[global.rank()];
    long[] extent = global.dims();
    for (OpSpec op : c.opChain()) {
      assertEquals("narrow", op.name(), "only narrow chains are expected: " + c);
      int d = ((Long) op.args().get(0)).intValue();
      start[d] += (Long) op.args().get(1);
      extent[d] = (Long) op.args().get(2);
    }
    assertEquals(Shape.of(extent), c.destShape(), "destination shape of " + c);
    long[] gs = global.rowMajorStrides();
    long[] ds = c.destStride();
    long[] idx = new long[extent.length];
    long n = c.destShape().numel();
    for (long k = 0; k < n; k++) {
      long src = 0;
      long dst = c.destOffset();
      for (int d = 0; d < idx.length; d++) {
        src += (start[d] + idx[d]) * gs[d];
        dst += idx[d] * ds[d];
      }
      sink.accept(dst, src);
      for (int d = idx.length - 1; d >= 0; d--) {
        if (++idx[d] < extent[d]) {
          break;
        }
        idx[d] = 0;
      }
    }
  }
}
