package dev.mx.api.error;

/**
 * Base of every error mx raises on purpose. Unchecked: callers decide where to handle a failed
 * refit.
 */
public class MxException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public MxException(String message) {
    super(message);
  }

  public MxException(String message, Throwable cause) {
    super(message, cause);
  }
}
