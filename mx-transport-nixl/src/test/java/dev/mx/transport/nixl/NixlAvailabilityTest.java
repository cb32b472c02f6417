package dev.mx.transport.nixl;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.transport.TransportProvider;
import dev.mx.api.util.Settings;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * How {@link Nixl} finds, accepts and rejects a NIXL library, and what the provider says about it.
 */
class NixlAvailabilityTest {

  @Test
  void theStubBuildIsRejectedWithItsCause() {
    String stub = NixlDouble.path("mx.nixl.test.stubDouble");
    UnsatisfiedLinkError e = assertThrows(UnsatisfiedLinkError.class, () -> NixlLibrary.load(stub));
    assertTrue(
        e.getMessage().contains("stub build") && e.getMessage().contains(stub), e.getMessage());
    Nixl.Probe p = Nixl.probe(Settings.of(Map.of(Nixl.LIBRARY_PROPERTY, stub), Map.of()));
    assertNull(p.library());
    assertTrue(p.cause().getMessage().contains("stub build"), p.cause().getMessage());
  }

  @Test
  void theConfiguredPathIsUsedPropertyFirstThenEnvironment() {
    String lib = NixlDouble.path("mx.nixl.test.double");
    Nixl.Probe fromEnv = Nixl.probe(Settings.of(Map.of(), Map.of(Nixl.LIBRARY_ENV, lib)));
    assertNull(fromEnv.cause());
    assertEquals(lib, fromEnv.library().origin());
    assertEquals(List.of("UCX"), fromEnv.plugins());
    Nixl.Probe propertyWins =
        Nixl.probe(
            Settings.of(
                Map.of(Nixl.LIBRARY_PROPERTY, "/nonexistent/libnixl_capi.so"),
                Map.of(Nixl.LIBRARY_ENV, lib)));
    assertInstanceOf(UnsatisfiedLinkError.class, propertyWins.cause());
    assertTrue(
        propertyWins.cause().getMessage().contains("/nonexistent/libnixl_capi.so does not exist"),
        propertyWins.cause().getMessage());
  }

  @Test
  void withoutAPathTheSystemLoaderPathIsTriedAndTheCauseSaysHowToConfigure() {
    Nixl.Probe p = Nixl.probe(Settings.of(Map.of(), Map.of()));
    if (p.cause() != null) {
      String m = p.cause().getMessage();
      assertTrue(
          m.contains("libnixl_capi.so")
              && m.contains(Nixl.LIBRARY_ENV)
              && m.contains(Nixl.LIBRARY_PROPERTY),
          m);
    } else {
      assertTrue(!p.plugins().isEmpty(), "a NIXL on the loader path lists its plugins");
    }
  }

  @Test
  void theKillSwitchWins() {
    Nixl.Probe p =
        Nixl.probe(
            Settings.of(
                Map.of(
                    Nixl.NO_NATIVE_PROPERTY,
                    "true",
                    Nixl.LIBRARY_PROPERTY,
                    NixlDouble.path("mx.nixl.test.double")),
                Map.of()));
    assertInstanceOf(UnsupportedOperationException.class, p.cause());
  }

  @Test
  void aLibraryWithoutNixlsFunctionsIsRejectedNamingThem() {
    UnsatisfiedLinkError e =
        assertThrows(UnsatisfiedLinkError.class, () -> NixlLibrary.load("libc.so.6"));
    assertTrue(e.getMessage().contains("nixl_capi_create_configured_agent"), e.getMessage());
  }

  @Test
  void agentConfigLayoutMatchesTheCStruct() {
    assertEquals(40, NixlLibrary.AGENT_CONFIG.byteSize());
    assertEquals(0, NixlLibrary.offset("enable_prog_thread"));
    assertEquals(1, NixlLibrary.offset("enable_listen_thread"));
    assertEquals(4, NixlLibrary.offset("listen_port"));
    assertEquals(8, NixlLibrary.offset("thread_sync"));
    assertEquals(12, NixlLibrary.offset("num_workers"));
    assertEquals(16, NixlLibrary.offset("pthr_delay_us"));
    assertEquals(24, NixlLibrary.offset("lthr_delay_us"));
    assertEquals(32, NixlLibrary.offset("capture_telemetry"));
  }

  @Test
  void providerNeverThrowsRanksAboveUcxAndIsFoundByTheRegistry() {
    NixlTransportProvider p = new NixlTransportProvider();
    assertEquals("nixl", p.name());
    assertEquals(9, p.priority());
    boolean available = assertDoesNotThrow(p::isAvailable);
    assertEquals(Nixl.isAvailable(), available);
    if (!available) {
      assertSame(Nixl.unavailabilityCause(), p.unavailabilityCause());
      UnsatisfiedLinkError e =
          assertThrows(
              UnsatisfiedLinkError.class,
              () -> p.create(dev.mx.api.transport.TransportConfig.of("x")));
      assertSame(Nixl.unavailabilityCause(), e.getCause());
    }
    assertTrue(
        TransportProvider.registry().providers().stream().anyMatch(t -> t.name().equals("nixl")));
  }
}
