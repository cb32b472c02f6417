package dev.mx.digest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.digest.DigestProvider;
import dev.mx.api.util.Settings;
import java.lang.foreign.MemorySegment;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The publication switch and the SPI registration. */
class PublicationAndProviderTest {
  private static final MemorySegment TEN_BYTES =
      MemorySegment.ofArray(new byte[] {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  private static final String TEN_BYTES_DIGEST = "1ad7cf339325676cba44326a8fe0a055";

  @Test
  void publicationIsOnByDefaultInMx() {
    assertEquals(
        TEN_BYTES_DIGEST, ShardDigest.publishedDigest(TEN_BYTES, Settings.of(Map.of(), Map.of())));
  }

  @Test
  void theEnvironmentAndThePropertySwitchItAndThePropertyWins() {
    String env = ShardDigest.PUBLISH_ENV;
    String prop = ShardDigest.PUBLISH_PROPERTY;
    assertNull(ShardDigest.publishedDigest(TEN_BYTES, Settings.of(Map.of(), Map.of(env, "0"))));
    assertNull(ShardDigest.publishedDigest(TEN_BYTES, Settings.of(Map.of(), Map.of(env, "False"))));
    assertEquals(
        TEN_BYTES_DIGEST,
        ShardDigest.publishedDigest(TEN_BYTES, Settings.of(Map.of(), Map.of(env, "1"))));
    assertNull(
        ShardDigest.publishedDigest(TEN_BYTES, Settings.of(Map.of(prop, "off"), Map.of(env, "1"))));
    assertEquals(
        TEN_BYTES_DIGEST,
        ShardDigest.publishedDigest(TEN_BYTES, Settings.of(Map.of(prop, "yes"), Map.of(env, "0"))));
    // Not a boolean: fails naming the setting, rather than guessing.
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                ShardDigest.publishedDigest(
                    TEN_BYTES, Settings.of(Map.of(), Map.of(env, "maybe"))));
    assertTrue(e.getMessage().startsWith(env + "='maybe'"), e.getMessage());
  }

  @Test
  void theLiveSwitchIsReadAtEachCall() {
    String before = System.getProperty(ShardDigest.PUBLISH_PROPERTY);
    try {
      System.setProperty(ShardDigest.PUBLISH_PROPERTY, "false");
      assertNull(ShardDigest.publishedDigest(TEN_BYTES));
      System.setProperty(ShardDigest.PUBLISH_PROPERTY, "true");
      assertEquals(TEN_BYTES_DIGEST, ShardDigest.publishedDigest(TEN_BYTES));
    } finally {
      if (before == null) {
        System.clearProperty(ShardDigest.PUBLISH_PROPERTY);
      } else {
        System.setProperty(ShardDigest.PUBLISH_PROPERTY, before);
      }
    }
  }

  @Test
  void theCpuProviderIsFoundThroughTheServiceLoader() {
    var registry = DigestProvider.registry();
    DigestProvider selected = registry.select();
    assertInstanceOf(CpuDigestProvider.class, selected);
    assertEquals("cpu", selected.name());
    assertTrue(selected.isAvailable());
    assertNull(selected.unavailabilityCause());
    assertEquals("dev.mx:mx-digest", selected.artifact());
    assertEquals(TEN_BYTES_DIGEST, registry.select("cpu").digest(TEN_BYTES));
  }
}
