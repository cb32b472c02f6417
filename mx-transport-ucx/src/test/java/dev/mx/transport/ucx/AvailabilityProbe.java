package dev.mx.transport.ucx;

import dev.mx.api.transport.TransportProvider;

/**
 * Prints, in a fresh JVM, what the transport registry says about ucx (for {@link
 * UcxAvailabilityTest}).
 */
public final class AvailabilityProbe {
  private AvailabilityProbe() {}

  public static void main(String[] args) {
    TransportProvider ucx =
        TransportProvider.registry().providers().stream()
            .filter(p -> p.name().equals("ucx"))
            .findFirst()
            .orElseThrow();
    System.out.println("available=" + ucx.isAvailable());
    System.out.println("cause=" + ucx.unavailabilityCause());
    try {
      System.out.println("selected=" + TransportProvider.registry().select().name());
    } catch (RuntimeException e) {
      System.out.println("selection failed: " + e.getMessage());
    }
  }
}
