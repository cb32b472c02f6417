package dev.mx.bench.suite;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import dev.mx.api.error.TransportException;
import dev.mx.api.transport.TransportProvider;
import dev.mx.cli.bench.BenchOptions;
import dev.mx.transport.nixl.Nixl;
import java.io.OutputStream;
import java.io.PrintStream;
import org.junit.jupiter.api.Test;

/**
 * {@code mx bench nixl} and {@code mx transports} where NIXL is absent (this machine's case without
 * MX_NIXL_LIBRARY).
 */
class NixlBenchTest {

  @Test
  void withoutNixlTheBenchSaysSoAndMeasuresNothing() {
    assumeFalse(Nixl.isAvailable(), "NIXL is available here: `./mx bench nixl` measures it");
    TransportException e =
        assertThrows(
            TransportException.class,
            () ->
                new NixlBench()
                    .run(new BenchOptions(1, 1, new PrintStream(OutputStream.nullOutputStream()))));
    assertTrue(
        e.getMessage().contains("NIXL IS ABSENT") && e.getMessage().contains("MX_NIXL_LIBRARY"),
        e.getMessage());
  }

  @Test
  void transportsListNixlWithItsCause() {
    TransportProvider nixl =
        TransportProvider.registry().providers().stream()
            .filter(p -> p.name().equals("nixl"))
            .findFirst()
            .orElseThrow();
    assertEquals(Nixl.isAvailable(), nixl.isAvailable());
    assertEquals(9, nixl.priority());
    if (!nixl.isAvailable()) {
      assertTrue(
          nixl.unavailabilityCause().getMessage().contains("libnixl_capi.so"),
          nixl.unavailabilityCause().getMessage());
    }
  }
}
