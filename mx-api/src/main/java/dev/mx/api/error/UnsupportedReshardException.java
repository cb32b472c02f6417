package dev.mx.api.error;

/**
 * A source cannot be planned: its geometry is not a rank-preserving permuted box, an op
 * materializes a copy, or its dtype needs a conversion the caller did not allow. The planner
 * catches it per source and records the source in the plan's fallback list.
 */
public class UnsupportedReshardException extends MxException {
  private static final long serialVersionUID = 1L;
  private final String source;

  public UnsupportedReshardException(String source, String reason) {
    super(source == null ? reason : reason + " (source '" + source + "')");
    this.source = source;
  }

  /** The source tensor at fault, or null when not yet known. */
  public String source() {
    return source;
  }

  /** The bare reason, without the source suffix. */
  public String reason() {
    String m = getMessage();
    return source == null
        ? m
        : m.substring(0, m.length() - (" (source '" + source + "')").length());
  }
}
