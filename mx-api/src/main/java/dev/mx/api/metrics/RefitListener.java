package dev.mx.api.metrics;

/**
 * Told what refits do, on the refitting thread. Every method has a no-op default, so a listener
 * overrides only what it measures. Calls must be cheap and must not throw: a listener that throws
 * is logged and skipped ({@link RefitListeners#of}), never allowed to fail a refit.
 */
public interface RefitListener {

  /**
   * Which refit a call is about.
   *
   * @param rank the receiving rank
   * @param step the step being refitted
   * @param transport the transport's name (e.g. {@code mem}, {@code shm}, {@code ucx})
   */
  record Refit(int rank, long step, String transport) {}

  /**
   * How a refit ended.
   *
   * @param installed true when the step was installed, false when the refit failed (nothing
   *     installed, or an in-place refit left torn)
   * @param bytes bytes read from the peers (0 when the refit failed before the wire)
   * @param descriptors read descriptors issued (segments)
   * @param seconds the whole refit, wall clock
   * @param failure the failure's class and message; null when installed
   */
  record Outcome(boolean installed, long bytes, long descriptors, double seconds, String failure) {
    /** {@code installed} or {@code failed}: the outcome as a tag value. */
    public String label() {
      return installed ? "installed" : "failed";
    }
  }

  /**
   * Which trainer rank's publish of a step a call is about.
   *
   * @param model the model the versions are kept under
   * @param slot the rank's slot in each version
   * @param step the step being published
   */
  record Publish(String model, String slot, long step) {}

  /** What happened to a version lease. */
  enum LeaseAction {
    ACQUIRED,
    RELEASED,
    LOST
  }

  /** A refit began (before discovery or planning it may run). */
  default void refitStarted(Refit refit) {}

  /** One stage of a finished refit took {@code seconds} (stage names end in {@code _s}). */
  default void stageTimed(Refit refit, String stage, double seconds) {}

  /** Digest checks of a finished refit: shards verified and shards read without verification. */
  default void shardsVerified(Refit refit, long verified, long unverifiable) {}

  /**
   * A shard did not verify (digest mismatch or no digest where one was required): nothing was
   * installed.
   *
   * @param source the source tensor
   * @param peer the publisher that served it
   * @param detail the failure's message
   */
  default void verificationFailed(Refit refit, String source, String peer, String detail) {}

  /** The engine now holds {@code refit.step()}. */
  default void installed(Refit refit) {}

  /** A refit ended; called once per {@link #refitStarted}. */
  default void refitFinished(Refit refit, Outcome outcome) {}

  /**
   * A version follower waited {@code seconds} for {@code step} of {@code model} to become readable
   * (0 when it was ready at once).
   */
  default void versionWaited(String model, long step, double seconds) {}

  /** A receiver's lease on a weight version changed. */
  default void lease(String model, String versionId, String holder, LeaseAction action) {}

  /**
   * One stage of a trainer rank's publish took {@code seconds}: {@code peers_wait_s} (the other
   * ranks landing the previous step), {@code lease_wait_s} (readers releasing the buffer set about
   * to be rewritten), {@code write_s} (the trainer's writer), {@code digest_s} (digests and shard
   * table), {@code slot_s} (the version and this rank's slot in the store).
   */
  default void publishStageTimed(Publish publish, String stage, double seconds) {}

  /**
   * A trainer rank's slot of a step landed, {@code seconds} after its publish began; {@code state}
   * is the version's then ({@code READY} when it was the last slot).
   */
  default void published(Publish publish, double seconds, String state) {}
}
