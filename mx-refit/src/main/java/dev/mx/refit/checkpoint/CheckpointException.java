package dev.mx.refit.checkpoint;

import dev.mx.api.annotation.Experimental;
import dev.mx.api.error.MxException;
import java.nio.file.Path;

/**
 * A checkpoint that cannot serve: a file missing, malformed, changed or truncated while mapped, or
 * a tensor whose name, shape or dtype does not match the model. The message names the file and,
 * where one is at fault, the tensor.
 */
@Experimental
public class CheckpointException extends MxException {
  private static final long serialVersionUID = 1L;

  /** The file at fault. */
  private final transient Path file;

  public CheckpointException(Path file, String message) {
    super("checkpoint " + file + ": " + message);
    this.file = file;
  }

  public CheckpointException(Path file, String message, Throwable cause) {
    super("checkpoint " + file + ": " + message, cause);
    this.file = file;
  }

  /** The file at fault. */
  public Path file() {
    return file;
  }
}
