package dev.mx.transport.shm;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Skips (printing the cause) when shm cannot work here; {@code -Dmx.test.requireNative=true} fails
 * instead.
 */
final class ShmTestSupport {
  private ShmTestSupport() {}

  static void assumeShm() {
    if (Boolean.getBoolean("mx.test.requireNative")) {
      Shm.ensureAvailability();
    }
    if (!Shm.isAvailable()) {
      System.out.println("shm transport unavailable, skipping: " + Shm.unavailabilityCause());
    }
    assumeTrue(Shm.isAvailable(), () -> "shm transport unavailable: " + Shm.unavailabilityCause());
  }
}
