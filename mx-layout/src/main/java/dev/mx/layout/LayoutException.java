package dev.mx.layout;

import dev.mx.api.error.MxException;

/**
 * A model or topology cannot be laid out: a config key is missing or inconsistent, a parallel size
 * does not divide an extent, or a tensor spec breaks an alias rule. The message names the key,
 * tensor or rank at fault.
 */
public class LayoutException extends MxException {
  private static final long serialVersionUID = 1L;

  public LayoutException(String message) {
    super(message);
  }

  public LayoutException(String message, Throwable cause) {
    super(message, cause);
  }
}
