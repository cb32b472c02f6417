package dev.mx.api.error;

import java.util.Arrays;

/** A received shard does not hash to the digest its publisher announced. Nothing is installed. */
public class DigestMismatchException extends MxException {
  private static final long serialVersionUID = 1L;
  private final String source;
  private final long[] shardOffset;
  private final String publisher;
  private final String expected;
  private final String actual;

  public DigestMismatchException(
      String source, long[] shardOffset, String publisher, String expected, String actual) {
    this(source, shardOffset, publisher, null, expected, actual);
  }

  /**
   * A mismatch of one region of the shard, {@code region} (e.g. "tile 3 (bytes [..))") naming it;
   * null: the shard.
   */
  public DigestMismatchException(
      String source,
      long[] shardOffset,
      String publisher,
      String region,
      String expected,
      String actual) {
    super(
        "staged weight digest mismatch for source '"
            + source
            + "' at offset "
            + Arrays.toString(shardOffset)
            + " published by '"
            + publisher
            + "'"
            + (region == null ? "" : ", " + region)
            + ": expected "
            + expected
            + ", got "
            + actual);
    this.source = source;
    this.shardOffset = shardOffset.clone();
    this.publisher = publisher;
    this.expected = expected;
    this.actual = actual;
  }

  public String source() {
    return source;
  }

  public long[] shardOffset() {
    return shardOffset.clone();
  }

  public String publisher() {
    return publisher;
  }

  public String expected() {
    return expected;
  }

  public String actual() {
    return actual;
  }
}
