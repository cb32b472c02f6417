package dev.mx.transport.kit;

import dev.mx.api.annotation.Internal;

/**
 * Whether a native backend (a library this process loads) works here, probed once: the contract
 * every native availability holder ({@code Shm}, {@code Ucx}, {@code Nixl}, {@code Cuda}) keeps.
 * {@link #isAvailable()} never throws; {@link #ensure()} throws an {@link UnsatisfiedLinkError}
 * saying "{@code <name>} is unavailable: {@code <cause>}" with the original failure as its cause.
 */
@Internal
public final class NativeAvailability {
  /** The system property that switches every native backend of mx off. */
  public static final String NO_NATIVE_PROPERTY = "mx.transport.noNative";

  private final String name;
  private final Throwable cause;

  /** {@code name} (as errors say it, e.g. {@code UCX}), unavailable for {@code cause} or null. */
  public NativeAvailability(String name, Throwable cause) {
    this.name = name;
    this.cause = cause;
  }

  /**
   * The first step of a probe: throws when {@code -Dmx.transport.noNative=true} switched native
   * backends off ({@code switchedOff}: that property as the probe reads it).
   */
  public static void refuseWhenSwitchedOff(boolean switchedOff) {
    if (switchedOff) {
      throw new UnsupportedOperationException(
          "native transports are disabled by -D" + NO_NATIVE_PROPERTY + "=true");
    }
  }

  public boolean isAvailable() {
    return cause == null;
  }

  /** Why it is unavailable (the original failure), or null when it is available. */
  public Throwable cause() {
    return cause;
  }

  /** Throws an error carrying {@link #cause()} when unavailable. */
  public void ensure() {
    if (cause != null) {
      throw (UnsatisfiedLinkError)
          new UnsatisfiedLinkError(name + " is unavailable: " + cause).initCause(cause);
    }
  }

  @Override
  public String toString() {
    return name + (cause == null ? " is available" : " is unavailable: " + cause);
  }
}
