package dev.mx.api.error;

/**
 * A publisher claims a tensor unchanged since the step a receiver holds ({@code changed_step}), but
 * its published digest differs from the digest of the bytes the receiver holds: a delta refit would
 * keep stale weights. The refit fails before any byte moves; nothing is installed.
 */
public class FalseUnchangedClaimException extends MxException {
  private static final long serialVersionUID = 1L;
  private final String source;
  private final String publisher;

  public FalseUnchangedClaimException(
      String source, String publisher, long changedStep, String held, String published) {
    super(
        "tensor '"
            + source
            + "': publisher '"
            + publisher
            + "' claims it unchanged since step "
            + changedStep
            + ", but its digest changed (held "
            + held
            + ", published "
            + published
            + "); refusing to keep the held bytes");
    this.source = source;
    this.publisher = publisher;
  }

  /** The tensor the false claim is about. */
  public String source() {
    return source;
  }

  /** The publisher (session) that made it. */
  public String publisher() {
    return publisher;
  }
}
