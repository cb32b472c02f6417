package dev.mx.transport.kit;

import dev.mx.api.annotation.Internal;

/**
 * An endpoint whose transfers move only while some thread of its process drives it (NIXL without
 * its progress thread). A process that only serves reads, and so never waits on a read of its own,
 * must then call {@link #progress()} in a loop while peers read from it.
 */
@Internal
public interface CallerDrivenProgress {

  /** Whether nothing drives this endpoint unless a caller calls {@link #progress()}. */
  boolean needsCallerProgress();

  /** Drives the endpoint once; a no-op when {@link #needsCallerProgress()} is false. */
  void progress();
}
