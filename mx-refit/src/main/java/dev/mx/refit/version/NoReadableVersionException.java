package dev.mx.refit.version;

import dev.mx.api.annotation.Stable;
import dev.mx.api.error.MxException;

/**
 * A follower found no version it could install within its timeout: none appeared, or every
 * candidate failed (a STALE or vanished publisher, a table digest mismatch, a failed read). The
 * message names them.
 */
@Stable
public class NoReadableVersionException extends MxException {
  private static final long serialVersionUID = 1L;

  public NoReadableVersionException(String message) {
    super(message);
  }

  public NoReadableVersionException(String message, Throwable cause) {
    super(message, cause);
  }
}
