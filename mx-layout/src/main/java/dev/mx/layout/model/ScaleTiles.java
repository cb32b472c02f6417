package dev.mx.layout.model;

import dev.mx.api.Box;
import dev.mx.api.DType;
import dev.mx.api.Shape;
import java.util.Objects;

/**
 * How a quantized source weight's scales are laid out: one scale per tile of {@code tileRows ×
 * tileCols} elements of each matrix (the last two dimensions; leading dimensions, an expert
 * stack's, are kept), in a tensor named {@code <weight><suffix>} of {@code dtype}. A tile size of
 * {@link #WHOLE} spans the whole dimension (per-channel scales: {@code 1 × WHOLE}).
 *
 * <p>A box of the weight has its own box of scales only where it does not cut a tile: along each
 * matrix dimension it starts on a tile boundary and ends on one or at the dimension's end, except
 * along a {@link #WHOLE} dimension, where every slice shares the one scale. A trainer rank can then
 * publish the scales of what it holds, and a receiver can install a slice with the scales its
 * publisher computed, unchanged.
 */
public record ScaleTiles(String suffix, DType dtype, long tileRows, long tileCols) {
  /** A tile size spanning the whole dimension. */
  public static final long WHOLE = 0;

  public ScaleTiles {
    Objects.requireNonNull(suffix, "suffix");
    Objects.requireNonNull(dtype, "dtype");
    if (tileRows < 0 || tileCols < 0) {
      throw new IllegalArgumentException(
          "scale tiles must be positive or WHOLE, got " + tileRows + " x " + tileCols);
    }
  }

  /** The name of the scale tensor of {@code weight}. */
  public String scaleName(String weight) {
    return weight + suffix;
  }

  /** The shape of the scales of a weight of {@code weight}: its tiles per matrix dimension. */
  public Shape scaleShape(Shape weight) {
    requireMatrix(weight);
    long[] d = weight.dims().clone();
    int r = d.length;
    d[r - 2] = tiles(d[r - 2], tile(tileRows, d[r - 2]));
    d[r - 1] = tiles(d[r - 1], tile(tileCols, d[r - 1]));
    return Shape.of(d);
  }

  /**
   * The box of the scales of {@code box} of a weight of {@code weight}.
   *
   * @throws IllegalArgumentException saying which dimension of the box cuts a tile
   */
  public Box scaleBox(Shape weight, Box box) {
    requireMatrix(weight);
    int r = weight.rank();
    long[] lo = box.lo();
    long[] hi = box.hi();
    for (int d = r - 2; d < r; d++) {
      long size = weight.dim(d);
      long requested = d == r - 2 ? tileRows : tileCols;
      long t = tile(requested, size);
      if (requested == WHOLE) {
        lo[d] = 0;
        hi[d] = 1;
        continue;
      }
      boolean startCuts = lo[d] % t != 0;
      boolean endCuts = hi[d] % t != 0 && hi[d] != size;
      if (startCuts || endCuts) {
        throw new IllegalArgumentException(
            (d == r - 2 ? "rows [" : "columns [")
                + lo[d]
                + ", "
                + hi[d]
                + ") of "
                + size
                + " cut a tile of "
                + t
                + " "
                + (d == r - 2 ? "rows" : "columns"));
      }
      lo[d] = lo[d] / t;
      hi[d] = tiles(hi[d], t);
    }
    return new Box(lo, hi);
  }

  /**
   * Like {@link #scaleBox}, for a box of a matrix whose scales hold its rows {@code [memberStart,
   * memberStart + memberRows)} as one member on its own grid (vLLM's fused parameters): the rows
   * are taken relative to the member, whose last tile may be partial.
   */
  public Box memberScaleBox(Shape weight, Box box, long memberStart, long memberRows) {
    int r = weight.rank();
    long[] dims = weight.dims().clone();
    dims[r - 2] = memberRows;
    long[] lo = box.lo();
    long[] hi = box.hi();
    lo[r - 2] -= memberStart;
    hi[r - 2] -= memberStart;
    return scaleBox(Shape.of(dims), new Box(lo, hi));
  }

  /** A tile's size along a dimension of {@code size} elements. */
  private static long tile(long requested, long size) {
    return requested == WHOLE ? Math.max(1, size) : requested;
  }

  private static long tiles(long n, long t) {
    return (n + t - 1) / t;
  }

  private static void requireMatrix(Shape weight) {
    if (weight.rank() < 2) {
      throw new IllegalArgumentException(
          "only matrices (or stacks of them) carry tile scales, not shape " + weight);
    }
  }
}
