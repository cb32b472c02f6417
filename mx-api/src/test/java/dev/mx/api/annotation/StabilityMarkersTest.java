package dev.mx.api.annotation;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.refit.GeometrySource;
import dev.mx.api.refit.WirePolicy;
import dev.mx.api.transport.MemoryKinds;
import dev.mx.api.util.Settings;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * The markers are in the class files (CLASS retention: what japicmp reads), on the SPI surface they
 * mark.
 */
class StabilityMarkersTest {

  private static String classFile(Class<?> c) throws IOException {
    try (InputStream in = c.getResourceAsStream(c.getSimpleName() + ".class")) {
      return new String(in.readAllBytes(), StandardCharsets.ISO_8859_1);
    }
  }

  @Test
  void evolvingSpisAreExperimentalAndSharedHelpersInternal() throws IOException {
    for (Class<?> c : new Class<?>[] {WirePolicy.class, GeometrySource.class}) {
      assertTrue(
          classFile(c).contains("Ldev/mx/api/annotation/Experimental;"),
          c + " is not @Experimental");
    }
    for (Class<?> c : new Class<?>[] {Settings.class, MemoryKinds.class}) {
      assertTrue(
          classFile(c).contains("Ldev/mx/api/annotation/Internal;"), c + " is not @Internal");
    }
  }
}
