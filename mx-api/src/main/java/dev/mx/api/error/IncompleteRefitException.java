package dev.mx.api.error;

import java.util.List;

/**
 * A refit was planned and run but would leave parameters (or bytes) unwritten. Deliberately not a
 * subtype of {@link UnsupportedReshardException}: nothing was unsupported, the result is
 * incomplete.
 */
public class IncompleteRefitException extends MxException {
  private static final long serialVersionUID = 1L;
  private final List<String> missing;

  public IncompleteRefitException(String message, List<String> missing) {
    super(message);
    this.missing = List.copyOf(missing);
  }

  /** Parameters (or sources) left unwritten, possibly a sample. */
  public List<String> missing() {
    return missing;
  }
}
