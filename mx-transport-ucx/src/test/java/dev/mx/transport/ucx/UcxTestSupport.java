package dev.mx.transport.ucx;

import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Skips (or, with {@code -Dmx.test.requireNative=true}, fails) a test when UCX is unavailable,
 * printing why.
 */
final class UcxTestSupport {
  private UcxTestSupport() {}

  static void requireUcx() {
    if (Ucx.isAvailable()) {
      return;
    }
    String why = "UCX is unavailable: " + Ucx.unavailabilityCause();
    if (Boolean.getBoolean("mx.test.requireNative")) {
      fail(why + " (and -Dmx.test.requireNative=true)", Ucx.unavailabilityCause());
    }
    System.err.println("skipping: " + why);
    assumeTrue(false, why);
  }
}
