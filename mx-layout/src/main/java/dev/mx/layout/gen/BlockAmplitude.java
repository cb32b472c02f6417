package dev.mx.layout.gen;

import dev.mx.api.Shape;

/**
 * The generator's optional per-block amplitude, for quantization tests: the default values of §5.4
 * give every block of a large tensor the same amax (about 0.5, exactly 0.5 in bf16), so a block
 * quantizer's factor takes one value. With an amplitude, element {@code i} of tensor {@code N} is
 * {@code float32(v · a)}, {@code v} its §5.4 value and {@code a} the f32 amplitude of the {@code
 * tile × tile} tile of the last two dimensions holding it (leading dimensions are separate
 * matrices; tiles at the edges partial). With {@code t} the tile's row-major index over all
 * matrices and {@code h = splitmix64(fnv1a64(N + "#amplitude") ^ t)}:
 *
 * <ul>
 *   <li>{@code t mod 16 == 3}: {@code a = 0} (an all-zero tile);
 *   <li>{@code t mod 16 == 7}: {@code a = 2^-126} (every nonzero value an f32 and bf16 subnormal);
 *   <li>otherwise {@code a = m · 2^e}, {@code m = 1 + ((h >>> 36) & 0x7fffff) · 2^-23}, {@code e =
 *       (h >>> 59) - 20}: 32 binades from 2^-20 to 2^11, each with a mantissa of its own (so the
 *       modes of a quantizer's factor disagree).
 * </ul>
 *
 * Amplitudes do not depend on the step. The product is rounded to f32 (to nearest even), then
 * stored as the dtype asks ({@link FloatBits#storedBits}).
 *
 * @param tile the tile edge, positive
 */
public record BlockAmplitude(int tile) {
  /** Tiles whose index is this modulo 16 are zero. */
  static final int ZERO_TILE = 3;

  /** Tiles whose index is this modulo 16 hold subnormals. */
  static final int SUBNORMAL_TILE = 7;

  public BlockAmplitude {
    if (tile <= 0) {
      throw new IllegalArgumentException("amplitude tile must be positive, got " + tile);
    }
  }

  /** The hash a tensor's tile amplitudes are drawn from. */
  static long seed(String tensorName) {
    return WeightGenerator.fnv1a64(tensorName + "#amplitude");
  }

  /** The amplitude of the tile holding element {@code flatIndex} of a tensor of {@code shape}. */
  public float at(String tensorName, Shape shape, long flatIndex) {
    return at(seed(tensorName), shape, flatIndex);
  }

  float at(long seed, Shape shape, long flatIndex) {
    int r = shape.rank();
    long cols = r >= 1 ? shape.dim(r - 1) : 1;
    long rows = r >= 2 ? shape.dim(r - 2) : 1;
    long tileRows = (rows + tile - 1) / tile;
    long tileCols = (cols + tile - 1) / tile;
    long c = flatIndex % cols;
    long row = (flatIndex / cols) % rows;
    long m = flatIndex / (cols * rows);
    long t = (m * tileRows + row / tile) * tileCols + c / tile;
    return ofTile(seed, t);
  }

  /** The amplitude of tile {@code t}. */
  static float ofTile(long seed, long t) {
    int kind = (int) (t & 15);
    if (kind == ZERO_TILE) {
      return 0f;
    }
    if (kind == SUBNORMAL_TILE) {
      return 0x1.0p-126f;
    }
    long h = WeightGenerator.splitmix64(seed ^ t);
    float m = 1f + ((h >>> 36) & 0x7f_ffff) * 0x1.0p-23f;
    return Math.scalb(m, (int) (h >>> 59) - 20);
  }
}
