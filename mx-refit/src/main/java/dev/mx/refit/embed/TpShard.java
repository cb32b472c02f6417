package dev.mx.refit.embed;

import dev.mx.api.Shape;
import dev.mx.api.annotation.Stable;
import dev.mx.api.plan.OpSpec;
import java.lang.foreign.MemorySegment;

/**
 * "Tensor-parallel shard {@code k} of {@code n} along dimension {@code dim}" of a global tensor:
 * equal contiguous blocks, as Megatron and vLLM split column- and row-parallel weights.
 *
 * @param global the global tensor's shape
 * @param dim the split dimension
 * @param k which shard, in {@code [0, n)}
 * @param n how many shards; must divide {@code global.dim(dim)}
 */
@Stable
public record TpShard(Shape global, int dim, int k, int n) {

  /** Validates the split, naming what does not fit. */
  public TpShard {
    if (dim < 0 || dim >= global.rank()) {
      throw new IllegalArgumentException(
          "TP shard along dim " + dim + " of a rank-" + global.rank() + " tensor " + global);
    }
    if (n < 1 || k < 0 || k >= n) {
      throw new IllegalArgumentException("TP shard " + k + " of " + n + ": need 0 <= k < n");
    }
    if (global.dim(dim) % n != 0) {
      throw new IllegalArgumentException(
          "TP " + n + " does not divide dim " + dim + " (" + global.dim(dim) + ") of " + global);
    }
  }

  /** Shard {@code k} of {@code n} of {@code global} along {@code dim}. */
  public static TpShard of(Shape global, int dim, int k, int n) {
    return new TpShard(global, dim, k, n);
  }

  /** The whole tensor (one shard of one). */
  public static TpShard whole(Shape global) {
    return new TpShard(global, 0, 0, 1);
  }

  /** Elements along {@code dim} in one shard. */
  public long length() {
    return global.dim(dim) / n;
  }

  /** First index along {@code dim}. */
  public long start() {
    return k * length();
  }

  /** Where the shard starts in the global tensor (what a publisher declares). */
  public long[] offset() {
    long[] o = new long[global.rank()];
    o[dim] = start();
    return o;
  }

  /** The shard's shape. */
  public Shape shape() {
    long[] d = global.dims();
    d[dim] = length();
    return new Shape(d);
  }

  /** The view op that selects this shard from the global tensor (what a receiver records). */
  public OpSpec narrow() {
    return OpSpec.narrow(dim, start(), length());
  }

  /**
   * Copies this shard out of a row-major global tensor into a row-major shard buffer: how a trainer
   * fills its local shard from a full tensor.
   *
   * @param globalBytes the global tensor, {@code global.numel() * elementSize} bytes
   * @param shardBytes the destination, {@code shape().numel() * elementSize} bytes
   */
  public void copy(MemorySegment globalBytes, MemorySegment shardBytes, int elementSize) {
    long inner = elementSize;
    for (int d = dim + 1; d < global.rank(); d++) {
      inner *= global.dim(d);
    }
    long outer = 1;
    for (int d = 0; d < dim; d++) {
      outer *= global.dim(d);
    }
    long run = length() * inner;
    long globalRow = global.dim(dim) * inner;
    for (long o = 0; o < outer; o++) {
      MemorySegment.copy(globalBytes, o * globalRow + start() * inner, shardBytes, o * run, run);
    }
  }
}
