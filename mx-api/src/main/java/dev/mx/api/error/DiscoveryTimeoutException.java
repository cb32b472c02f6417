package dev.mx.api.error;

/** Fewer than the expected number of non-empty READY publishers appeared before the deadline. */
public class DiscoveryTimeoutException extends MxException {
  private static final long serialVersionUID = 1L;
  private final String store;
  private final int expected;
  private final int ready;
  private final int nonEmpty;
  private final int empty;
  private final int unreadable;

  public DiscoveryTimeoutException(
      String store, int expected, int ready, int nonEmpty, int empty, double timeoutSeconds) {
    super(
        "discovery on "
            + store
            + " timed out after "
            + timeoutSeconds
            + " s: expected "
            + expected
            + " non-empty READY trainer table(s), saw "
            + ready
            + " READY, "
            + nonEmpty
            + " non-empty, "
            + empty
            + " empty");
    this.store = store;
    this.expected = expected;
    this.ready = ready;
    this.nonEmpty = nonEmpty;
    this.empty = empty;
    this.unreadable = 0;
  }

  /**
   * As above, also counting the READY sources whose table could not be read or decoded, with the
   * last failure (a dead store, an unreadable table) as the cause.
   */
  public DiscoveryTimeoutException(
      String store,
      int expected,
      int ready,
      int nonEmpty,
      int empty,
      int unreadable,
      double timeoutSeconds,
      Throwable lastFailure) {
    super(
        "discovery on "
            + store
            + " timed out after "
            + timeoutSeconds
            + " s: expected "
            + expected
            + " non-empty READY trainer table(s), saw "
            + ready
            + " READY, "
            + nonEmpty
            + " non-empty, "
            + empty
            + " empty, "
            + unreadable
            + " unreadable"
            + (lastFailure == null ? "" : "; last failure: " + lastFailure),
        lastFailure);
    this.store = store;
    this.expected = expected;
    this.ready = ready;
    this.nonEmpty = nonEmpty;
    this.empty = empty;
    this.unreadable = unreadable;
  }

  public String store() {
    return store;
  }

  public int expected() {
    return expected;
  }

  public int ready() {
    return ready;
  }

  public int nonEmpty() {
    return nonEmpty;
  }

  public int empty() {
    return empty;
  }

  /** READY sources whose table could not be fetched or decoded in the last sweep. */
  public int unreadable() {
    return unreadable;
  }
}
