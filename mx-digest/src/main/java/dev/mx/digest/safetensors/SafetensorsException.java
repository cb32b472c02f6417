package dev.mx.digest.safetensors;

import dev.mx.api.error.MxException;

/**
 * A safetensors file that cannot be read as one; the message names the file and, where known, the
 * tensor.
 */
public class SafetensorsException extends MxException {
  private static final long serialVersionUID = 1L;
  private final String source;
  private final String tensor;

  public SafetensorsException(String source, String tensor, String problem) {
    this(source, tensor, problem, null);
  }

  public SafetensorsException(String source, String tensor, String problem, Throwable cause) {
    super(source + (tensor == null ? "" : ": tensor '" + tensor + "'") + ": " + problem, cause);
    this.source = source;
    this.tensor = tensor;
  }

  /** The file (or other source) at fault. */
  public String source() {
    return source;
  }

  /** The tensor at fault, or null when the problem is not specific to one. */
  public String tensor() {
    return tensor;
  }
}
