package dev.mx.plan;

import dev.mx.api.Box;

/**
 * A source's shards do not tile its global shape: {@link #kind()} says whether some element is held
 * by no shard (a hole) or by two shards of different geometry (an overlap), and {@link #box()} is
 * the first such box found.
 */
public final class ShardTilingException extends PlanInputException {
  private static final long serialVersionUID = 1L;

  /** What is wrong with the tiling. */
  public enum Kind {
    HOLE,
    OVERLAP
  }

  private final String source;
  private final Kind kind;
  private final transient Box box;

  ShardTilingException(String path, String source, Kind kind, Box box, String detail) {
    super(path, detail);
    this.source = source;
    this.kind = kind;
    this.box = box;
  }

  /** The source at fault. */
  public String source() {
    return source;
  }

  public Kind kind() {
    return kind;
  }

  /**
   * The first hole or overlap found, in global element coordinates; null when a hole could not be
   * located.
   */
  public Box box() {
    return box;
  }
}
