package dev.mx.api.error;

import java.util.Arrays;

/**
 * Strict verification cannot check a published shard: its publisher announced no digest, or the
 * refit cannot reconstruct the shard's complete bytes. Raised before anything is installed.
 */
public class UnverifiableShardException extends MxException {
  private static final long serialVersionUID = 1L;
  private final String source;
  private final long[] shardOffset;
  private final String publisher;

  public UnverifiableShardException(
      String source, long[] shardOffset, String publisher, String reason) {
    super(
        "cannot verify shard of source '"
            + source
            + "' at offset "
            + Arrays.toString(shardOffset)
            + " published by '"
            + publisher
            + "': "
            + reason);
    this.source = source;
    this.shardOffset = shardOffset.clone();
    this.publisher = publisher;
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
}
