package dev.mx.transport.ucx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.transport.TransportConfig;
import dev.mx.api.transport.TransportProvider;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The availability holder and the provider's place in the registry. */
@SuppressWarnings("restricted") // calling native code is what this class is for
class UcxAvailabilityTest {

  @Test
  void ucxIsFoundAvailableAndPreferredOverMem() {
    UcxTestSupport.requireUcx();
    assertTrue(Ucx.version().startsWith("1."), Ucx.version());
    assertNull(Ucx.unavailabilityCause());
    TransportProvider ucx = TransportProvider.registry().select("ucx");
    assertEquals(8, ucx.priority());
    assertTrue(ucx.isAvailable());
    assertEquals("dev.mx:mx-transport-ucx", ucx.artifact());
    assertEquals(
        "ucx",
        TransportProvider.registry().select().name(),
        "auto picks the highest available priority");
  }

  @Test
  void libucsWasLoadedWithItsSignalHandlersDisabled() throws Throwable {
    UcxTestSupport.requireUcx();
    MethodHandle getenv =
        Linker.nativeLinker()
            .downcallHandle(
                Linker.nativeLinker().defaultLookup().find("getenv").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.ADDRESS));
    try (Arena a = Arena.ofConfined()) {
      MemorySegment v = (MemorySegment) getenv.invokeExact(a.allocateFrom("UCX_ERROR_SIGNALS"));
      assertEquals("", v.reinterpret(64).getString(0), "UCX_ERROR_SIGNALS in the C environment");
    }
  }

  @Test
  void theKillSwitchMakesUcxUnavailableWithItsCause() throws Exception {
    Process p =
        new ProcessBuilder(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED",
                "-Dmx.transport.noNative=true",
                "-cp",
                System.getProperty("java.class.path"),
                AvailabilityProbe.class.getName())
            .redirectErrorStream(true)
            .start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(60, TimeUnit.SECONDS));
    assertEquals(0, p.exitValue(), out);
    List<String> lines = out.lines().toList();
    assertTrue(lines.contains("available=false"), out);
    assertTrue(
        lines.stream().anyMatch(l -> l.startsWith("cause=") && l.contains("mx.transport.noNative")),
        out);
    // Only ucx is on this module's class path: selection fails, naming ucx and why it is
    // unavailable.
    assertTrue(
        lines.stream()
            .anyMatch(
                l ->
                    l.startsWith("selection failed:")
                        && l.contains("ucx")
                        && l.contains("mx.transport.noNative")),
        out);
  }

  @Test
  void creatingAnEndpointWhenUnavailableCarriesTheCause() {
    if (Ucx.isAvailable()) {
      // Here UCX works, so a bad configuration is the way to see a refused endpoint name its cause.
      var e =
          assertThrows(
              dev.mx.api.error.TransportException.class,
              () ->
                  new UcxTransportProvider()
                      .create(
                          new TransportConfig(
                              "bad",
                              java.time.Duration.ofSeconds(1),
                              java.util.Map.of("ucx.errorHandling", "maybe"))));
      assertTrue(e.getMessage().contains("ucx.errorHandling"), e.getMessage());
    } else {
      UnsatisfiedLinkError e =
          assertThrows(
              UnsatisfiedLinkError.class,
              () -> new UcxTransportProvider().create(TransportConfig.of("x")));
      assertSame(Ucx.unavailabilityCause(), e.getCause(), "the original failure is the cause");
    }
  }
}
