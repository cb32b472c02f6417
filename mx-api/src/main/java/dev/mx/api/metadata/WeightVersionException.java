package dev.mx.api.metadata;

import dev.mx.api.error.MxException;
import java.util.Objects;

/** A weight-version operation the store refused; {@link #reason()} says which rule it broke. */
public class WeightVersionException extends MxException {
  private static final long serialVersionUID = 1L;

  /** Which rule was broken. */
  public enum Reason {
    /** The version (or its model) is not in the store. */
    NOT_FOUND,
    /**
     * The version is in a state the operation does not allow (e.g. a new lease on a RELEASING
     * version).
     */
    WRONG_STATE,
    /** A slot that is not among the version's expected slots. */
    UNKNOWN_SLOT,
    /**
     * Someone else already holds this: another worker's slot, a version created with other fields.
     */
    CONFLICT,
    /** A shard table whose bytes do not hash to the digest advertised with it. */
    DIGEST_MISMATCH,
    /** A lease that expired (or was never taken) was renewed. */
    LEASE_LOST
  }

  private final Reason reason;

  public WeightVersionException(Reason reason, String message) {
    super(message);
    this.reason = Objects.requireNonNull(reason, "reason");
  }

  public WeightVersionException(Reason reason, String message, Throwable cause) {
    super(message, cause);
    this.reason = Objects.requireNonNull(reason, "reason");
  }

  public Reason reason() {
    return reason;
  }
}
