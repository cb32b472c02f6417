package dev.mx.cli.demo;

import dev.mx.api.metadata.VersionLease;
import dev.mx.api.metadata.WeightVersionStore;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/**
 * Waits until a weight version is leased by a number of distinct holders: the event after which the
 * demo's trainers may write the next step into their other buffer set while the receivers read.
 */
final class LeaseWatch {
  private LeaseWatch() {}

  /**
   * Returns once {@code holders} distinct receivers hold a lease on {@code versionId}, or as soon
   * as {@code giveUp} is true (the receivers' step ended: a fast refit may lease and release
   * between two looks).
   */
  static void awaitHolders(
      WeightVersionStore versions,
      String model,
      String versionId,
      int holders,
      BooleanSupplier giveUp) {
    long pauseNanos = 200_000;
    while (!giveUp.getAsBoolean()) {
      Set<String> seen = new HashSet<>();
      for (VersionLease l : versions.leases(model, versionId)) {
        seen.add(l.holder());
      }
      if (seen.size() >= holders) {
        return;
      }
      LockSupport.parkNanos(pauseNanos);
      pauseNanos = Math.min(pauseNanos * 2, 5_000_000);
    }
  }
}
