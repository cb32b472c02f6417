package dev.mx.digest;

/**
 * The two row scalars of the digest over a run of whole 1024-word rows: {@code sum} is the sum of
 * the row sums, {@code weightedSum} the sum of {@code rowSum[r] * (r + 1)} with {@code r} counted
 * from the first row of the run. Both wrap modulo 2^64, exactly like the int64 tensors of the
 * reference.
 *
 * <p>Runs combine exactly: a run of {@code rows} rows followed by another one is the same as the
 * whole, because the second run's weights are its local weights shifted by {@code rows}. That is
 * what lets row ranges be digested on different threads, or fed in pieces, and still give the
 * reference's scalars.
 *
 * @param rows number of whole rows in the run
 * @param sum sum of the row sums, mod 2^64
 * @param weightedSum sum of {@code rowSum[r] * (r + 1)}, mod 2^64
 */
public record RowSums(long rows, long sum, long weightedSum) {

  /** No rows. */
  public static final RowSums EMPTY = new RowSums(0, 0, 0);

  public RowSums {
    if (rows < 0) {
      throw new IllegalArgumentException("row count must not be negative: " + rows);
    }
  }

  /** The run of one row whose words sum to {@code rowSum}. */
  public static RowSums ofRow(long rowSum) {
    return new RowSums(1, rowSum, rowSum);
  }

  /**
   * This run followed by {@code next}: {@code next}'s row {@code j} has global weight {@code rows +
   * j + 1}, so its weighted sum gains {@code rows * next.sum} (all mod 2^64).
   */
  public RowSums followedBy(RowSums next) {
    return new RowSums(
        rows + next.rows, sum + next.sum, weightedSum + next.weightedSum + rows * next.sum);
  }
}
