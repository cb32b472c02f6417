package dev.mx.metadata;

import dev.mx.api.annotation.Stable;
import dev.mx.api.error.MxException;

/**
 * A shard table that is not a valid {@code mx.reshard.shard_table.v1} document: not JSON, the wrong
 * schema, a missing key, a value of the wrong type or out of range, or larger than the configured
 * limits. {@link #path()} names the field at fault, e.g. {@code tensors[3].shards[1].shape} ({@code
 * $} for the document itself).
 */
@Stable
public class ShardTableFormatException extends MxException {
  private static final long serialVersionUID = 1L;
  private final String path;

  public ShardTableFormatException(String path, String problem) {
    super("shard table: " + path + ": " + problem);
    this.path = path;
  }

  public ShardTableFormatException(String path, String problem, Throwable cause) {
    super("shard table: " + path + ": " + problem, cause);
    this.path = path;
  }

  /** The JSON path of the offending field. */
  public String path() {
    return path;
  }
}
