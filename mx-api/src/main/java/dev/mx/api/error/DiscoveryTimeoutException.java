package dev.mx.api.error;

/** Fewer than the expected number of non-empty READY publishers appeared before the deadline. */
public class DiscoveryTimeoutException extends MxException {
  private static final long serialVersionUID = 1L;
  private final String store;
  private final int expected;
  private final int ready;
  private final int nonEmpty;
  private final int empty;

  public DiscoveryTimeoutException(
      String store, int expected, int ready, int nonEmpty, int empty, double timeoutSeconds) {
    super("discovery on " + store + " timed out after " + timeoutSeconds + " s: expected " + expected
        + " non-empty READY trainer table(s), saw " + ready + " READY, " + nonEmpty + " non-empty, "
        + empty + " empty");
    this.store = store;
    this.expected = expected;
    this.ready = ready;
    this.nonEmpty = nonEmpty;
    this.empty = empty;
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
}
