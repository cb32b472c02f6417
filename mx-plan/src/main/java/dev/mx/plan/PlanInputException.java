package dev.mx.plan;

/**
 * A planning input that cannot describe a real transfer (holes or overlaps between shards, an
 * address or byte count out of range, destination strides that alias): the planner rejects it
 * before planning. The message starts with the JSON path of the value at fault in the {@code mx
 * plan} request format (ARCHITECTURE §5.3), e.g. {@code sources.w.shards[1].addr} or {@code
 * copies[3].dest_stride}, which {@link #path()} also returns.
 */
public class PlanInputException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;
  private final String path;

  public PlanInputException(String path, String detail) {
    super(path + ": " + detail);
    this.path = path;
  }

  /** The JSON path of the value at fault. */
  public String path() {
    return path;
  }
}
