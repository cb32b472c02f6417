package dev.mx.transport.nixl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.transport.TransportConfig;
import dev.mx.api.util.Settings;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Defaults and every mapping of {@link NixlOptions}. */
class NixlOptionsTest {
  private static final Settings NONE = Settings.of(Map.of(), Map.of());

  private static TransportConfig config(Map<String, String> properties) {
    return new TransportConfig("s", Duration.ofSeconds(1), properties);
  }

  @Test
  void defaults() {
    NixlOptions o = NixlOptions.from(config(Map.of()), NONE);
    assertEquals(
        new NixlOptions("UCX", Map.of(), true, 1000, NixlOptions.THREAD_SYNC_STRICT, 64), o);
  }

  @Test
  void endpointPropertiesMapEveryKnob() {
    NixlOptions o =
        NixlOptions.from(
            config(
                Map.of(
                    "nixl.backend",
                    "LIBFABRIC",
                    "nixl.param.num_workers",
                    "4",
                    "nixl.param.engine_config",
                    "K=V,K2=V2",
                    "nixl.progressThread",
                    "off",
                    "nixl.progressDelayUs",
                    "250",
                    "nixl.threadSync",
                    "none",
                    "nixl.cachedRequests",
                    "3")),
            NONE);
    assertEquals(
        new NixlOptions(
            "LIBFABRIC",
            Map.of("num_workers", "4", "engine_config", "K=V,K2=V2"),
            false,
            250,
            NixlOptions.THREAD_SYNC_NONE,
            3),
        o);
  }

  @Test
  void systemPropertiesThenEnvironmentWhenTheEndpointSaysNothing() {
    Settings s =
        Settings.of(
            Map.of("mx.nixl.backend", "UCX", "mx.nixl.progressDelayUs", "10"),
            Map.of(
                "MX_NIXL_BACKEND",
                "GDS",
                "MX_NIXL_BACKEND_PARAMS",
                "num_workers=2; ucx_error_handling_mode=none",
                "MX_NIXL_PROGRESS_THREAD",
                "0",
                "MX_NIXL_THREAD_SYNC",
                "RW",
                "MX_NIXL_CACHED_REQUESTS",
                "0"));
    NixlOptions o = NixlOptions.from(config(Map.of("nixl.param.num_workers", "8")), s);
    assertEquals(
        new NixlOptions(
            "UCX",
            Map.of("num_workers", "8", "ucx_error_handling_mode", "none"),
            false,
            10,
            NixlOptions.THREAD_SYNC_RW,
            0),
        o);
  }

  @Test
  void malformedValuesNameTheSetting() {
    for (Map<String, String> bad :
        java.util.List.of(
            Map.of("nixl.progressThread", "maybe"),
            Map.of("nixl.progressDelayUs", "-1"),
            Map.of("nixl.progressDelayUs", "1ms"),
            Map.of("nixl.threadSync", "ALL"),
            Map.of("nixl.cachedRequests", "many"))) {
      IllegalArgumentException e =
          assertThrows(IllegalArgumentException.class, () -> NixlOptions.from(config(bad), NONE));
      assertTrue(e.getMessage().contains(bad.keySet().iterator().next()), e.getMessage());
    }
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                NixlOptions.from(
                    config(Map.of()),
                    Settings.of(Map.of("mx.nixl.backendParams", "num_workers"), Map.of())));
    assertTrue(e.getMessage().contains("mx.nixl.backendParams"), e.getMessage());
  }
}
