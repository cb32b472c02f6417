package dev.mx.api.error;

/**
 * An in-place refit failed after it had begun writing the engine's live weights: until they are
 * restored (or a later refit succeeds) they may hold a mix of the previous and the failed step. The
 * message names the rank, the step and the cause; {@link #restoredStep()} says whether the previous
 * step was put back.
 */
public class TornInstallException extends MxException {
  private static final long serialVersionUID = 1L;
  private final int rank;
  private final long step;
  private final long restoredStep;

  public TornInstallException(String message, int rank, long step, Throwable cause) {
    this(message, rank, step, -1, cause);
  }

  private TornInstallException(
      String message, int rank, long step, long restoredStep, Throwable cause) {
    super(message, cause);
    this.rank = rank;
    this.step = step;
    this.restoredStep = restoredStep;
  }

  /** The receiver rank whose live weights were being written. */
  public int rank() {
    return rank;
  }

  /** The step whose install failed part-way. */
  public long step() {
    return step;
  }

  /** The step the live weights were restored to, or -1 when they were not restored. */
  public long restoredStep() {
    return restoredStep;
  }

  /** Whether the live weights hold the previous step again, verified. */
  public boolean restored() {
    return restoredStep >= 0;
  }

  /** The same failure, after the live weights were restored to {@code previous}. */
  public TornInstallException restoredTo(long previous) {
    TornInstallException e =
        new TornInstallException(
            getMessage() + "; the live weights were restored to step " + previous + ", verified",
            rank,
            step,
            previous,
            getCause());
    e.setStackTrace(getStackTrace());
    return e;
  }
}
