package dev.mx.metadata.redis;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.metadata.MetadataStoreProvider;
import dev.mx.metadata.MetadataStores;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Redis URIs that are wrong before any network access, and a class path without the Redis client.
 */
class RedisUriTest {

  @ParameterizedTest
  @ValueSource(
      strings = {
        "redis://no-such-host.invalid:abc",
        "redis://no-such-host.invalid:99999",
        "redis://no-such-host.invalid:",
        "redis://:secret@no-such-host.invalid:0/1",
        "redis://no-such-host.invalid:-1"
      })
  void aMalformedPortIsRejectedBeforeAnyLookup(String uri) {
    long start = System.nanoTime();
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> MetadataStores.open(uri));
    assertTrue(
        e.getMessage().contains("the port must be a number from 1 to 65535"), e.getMessage());
    assertTrue(e.getMessage().contains("no-such-host.invalid"), e.getMessage());
    assertFalse(e.getMessage().contains("secret"), "password leaked: " + e.getMessage());
    // A name lookup of .invalid would take a resolver round trip; no connection is attempted at
    // all.
    assertTrue(System.nanoTime() - start < 5_000_000_000L);
  }

  @Test
  void aValidPortPassesTheCheck() {
    RedisMetadataStore.checkPort("redis://host:6379/0");
    RedisMetadataStore.checkPort("redis://:pw@host:1");
    RedisMetadataStore.checkPort("redis://host");
    RedisMetadataStore.checkPort("redis://[::1]");
  }

  @Test
  void withoutLettuceTheProviderIsUnavailableAndNamesTheArtifact() throws Exception {
    URL metadata =
        RedisMetadataStoreProvider.class.getProtectionDomain().getCodeSource().getLocation();
    URL api = MetadataStoreProvider.class.getProtectionDomain().getCodeSource().getLocation();
    // Only mx-metadata and mx-api: lettuce is not there, as for a consumer that left the optional
    // dependency out.
    try (URLClassLoader loader =
        new URLClassLoader(new URL[] {metadata, api}, ClassLoader.getPlatformClassLoader())) {
      Class<?> provider = Class.forName(RedisMetadataStoreProvider.class.getName(), true, loader);
      Object p = provider.getConstructor().newInstance();
      Method available = provider.getMethod("isAvailable");
      Method cause = provider.getMethod("unavailabilityCause");
      assertEquals(false, available.invoke(p));
      Throwable t = (Throwable) cause.invoke(p);
      assertTrue(t.getMessage().contains("io.lettuce:lettuce-core"), t.getMessage());
      assertTrue(t.getCause() instanceof ClassNotFoundException, String.valueOf(t.getCause()));
    }
  }
}
