package dev.mx.transport.ucx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.transport.TransportConfig;
import dev.mx.api.util.Settings;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Where each ucx knob comes from, and the UCX settings derived from them. */
class UcxOptionsTest {
  private static final Settings NOTHING = Settings.of(Map.of(), Map.of());

  private static TransportConfig config(Map<String, String> properties) {
    return new TransportConfig("s", Duration.ofSeconds(5), properties);
  }

  @Test
  void defaultsLeaveSharedMemoryOutAndShortenKeepalive() {
    UcxOptions o = UcxOptions.from(config(Map.of()), NOTHING);
    assertEquals("^sm", o.tls());
    assertTrue(o.peerErrorHandling());
    assertEquals(UcxOptions.DEFAULT_MAX_REGIONS, o.maxRegions());
    assertEquals(Map.of("KEEPALIVE_INTERVAL", "1s"), o.ucxConfig());
  }

  @Test
  void sharedMemoryGetsPeerFailureHandlingSwitchedOn() {
    UcxOptions o = UcxOptions.from(config(Map.of("ucx.tls", "sm,tcp")), NOTHING);
    assertEquals("sm,tcp", o.tls());
    assertEquals("y", o.ucxConfig().get("MM_ERROR_HANDLING"));
    UcxOptions none =
        UcxOptions.from(config(Map.of("ucx.tls", "sm,tcp", "ucx.errorHandling", "none")), NOTHING);
    assertFalse(none.peerErrorHandling());
    assertEquals(Map.of(), none.ucxConfig());
  }

  @Test
  void propertyBeatsSystemPropertyBeatsEnvironment() {
    Settings both =
        Settings.of(Map.of("mx.ucx.tls", "rc,tcp"), Map.of("MX_UCX_TLS", "ud", "UCX_TLS", "tcp"));
    assertEquals("posix,tcp", UcxOptions.from(config(Map.of("ucx.tls", "posix,tcp")), both).tls());
    assertEquals("rc,tcp", UcxOptions.from(config(Map.of()), both).tls());
    assertEquals(
        "ud",
        UcxOptions.from(config(Map.of()), Settings.of(Map.of(), Map.of("MX_UCX_TLS", "ud"))).tls());
  }

  @Test
  void blankSettingsCountAsUnset() {
    Settings blank = Settings.of(Map.of(), Map.of("MX_UCX_TLS", " ", "UCX_TLS", ""));
    assertEquals("^sm", UcxOptions.from(config(Map.of("ucx.tls", "")), blank).tls());
  }

  @Test
  void aUcxTlsEnvironmentVariableIsLeftToUcx() {
    Settings env = Settings.of(Map.of(), Map.of("UCX_TLS", "sm", "UCX_KEEPALIVE_INTERVAL", "5s"));
    UcxOptions o = UcxOptions.from(config(Map.of()), env);
    assertNull(o.tls());
    assertEquals("y", o.ucxConfig().get("MM_ERROR_HANDLING"), "UCX_TLS=sm selects shared memory");
    assertFalse(
        o.ucxConfig().containsKey("KEEPALIVE_INTERVAL"), "the environment's keepalive stays");
  }

  @Test
  void ucxConfigPropertiesPassThroughUpperCased() {
    UcxOptions o =
        UcxOptions.from(
            config(Map.of("ucx.config.rndv_thresh", "8k", "ucx.config.KEEPALIVE_INTERVAL", "3s")),
            NOTHING);
    assertEquals("8k", o.ucxConfig().get("RNDV_THRESH"));
    assertEquals("3s", o.ucxConfig().get("KEEPALIVE_INTERVAL"));
  }

  @Test
  void badValuesAreRefusedNamingTheKey() {
    IllegalArgumentException mode =
        assertThrows(
            IllegalArgumentException.class,
            () -> UcxOptions.from(config(Map.of("ucx.errorHandling", "sometimes")), NOTHING));
    assertTrue(mode.getMessage().contains("ucx.errorHandling"), mode.getMessage());
    IllegalArgumentException regions =
        assertThrows(
            IllegalArgumentException.class,
            () -> UcxOptions.from(config(Map.of("ucx.maxRegions", "lots")), NOTHING));
    assertTrue(regions.getMessage().contains("ucx.maxRegions"), regions.getMessage());
    assertThrows(
        IllegalArgumentException.class,
        () -> UcxOptions.from(config(Map.of("ucx.maxRegions", "0")), NOTHING));
  }

  @Test
  void recognisesWhichTransportListsIncludeSharedMemory() {
    assertTrue(UcxOptions.usesSharedMemory(null));
    assertTrue(UcxOptions.usesSharedMemory("sm,tcp"));
    assertTrue(UcxOptions.usesSharedMemory("posix"));
    assertTrue(UcxOptions.usesSharedMemory("all"));
    assertTrue(UcxOptions.usesSharedMemory("^tcp"));
    assertTrue(UcxOptions.usesSharedMemory("^posix"), "sysv is still in");
    assertFalse(UcxOptions.usesSharedMemory("tcp"));
    assertFalse(UcxOptions.usesSharedMemory("rc,ud,cma"));
    assertFalse(UcxOptions.usesSharedMemory("^sm"));
    assertFalse(UcxOptions.usesSharedMemory("^posix,sysv"));
  }
}
