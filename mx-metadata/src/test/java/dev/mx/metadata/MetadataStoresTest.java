package dev.mx.metadata;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.error.NoProviderException;
import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.MetadataStoreProvider;
import dev.mx.api.metadata.SourceRecord;
import dev.mx.api.metadata.SourceStatus;
import dev.mx.api.spi.ProviderRegistry;
import dev.mx.api.util.Settings;
import dev.mx.metadata.file.FileMetadataStore;
import dev.mx.metadata.memory.MemoryMetadataStore;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class MetadataStoresTest {
  @TempDir Path dir;

  @Test
  void everySchemeIsFoundThroughServiceLoader() {
    assertEquals(
        List.of("file", "memory", "redis"),
        MetadataStores.registry().providers().stream()
            .map(MetadataStoreProvider::scheme)
            .sorted()
            .toList());
    MetadataStores.registry().providers().forEach(p -> assertTrue(p.isAvailable(), p.toString()));
  }

  @Test
  void memoryStoresOfTheSameNameShareState() {
    try (MetadataStore a = MetadataStores.open("memory:shared-by-name");
        MetadataStore b = MetadataStores.open("memory:shared-by-name")) {
      assertInstanceOf(MemoryMetadataStore.class, a);
      a.publish(new SourceRecord("id", "w", 0, new byte[] {42}, SourceStatus.READY, 0));
      assertEquals(42, b.get("id", "w").orElseThrow().blob()[0]);
      assertEquals("memory:shared-by-name", b.uri());
    }
  }

  @Test
  void fileUrisNameADirectoryInEverySpelling() {
    for (String uri :
        new String[] {
          "file:" + dir.resolve("a"),
          "file://" + dir.resolve("b"),
          "file:" + dir.resolve("with space")
        }) {
      try (MetadataStore s = MetadataStores.open(uri)) {
        assertInstanceOf(FileMetadataStore.class, s);
        s.publish(new SourceRecord("id", "w", 0, new byte[] {1}, SourceStatus.READY, 0));
      }
    }
    assertTrue(
        Files.isDirectory(dir.resolve("a"))
            && Files.isDirectory(dir.resolve("b"))
            && Files.isDirectory(dir.resolve("with space")));
    IllegalArgumentException remote =
        assertThrows(
            IllegalArgumentException.class, () -> MetadataStores.open("file://otherhost/tmp/x"));
    assertTrue(remote.getMessage().contains("local to one host"), remote.getMessage());
  }

  @Test
  void anUnknownSchemeFailsListingTheKnownOnes() {
    NoProviderException e =
        assertThrows(NoProviderException.class, () -> MetadataStores.open("etcd://h:2379"));
    assertTrue(
        e.getMessage()
            .startsWith(
                "no metadata store for scheme 'etcd' (in 'etcd://h:2379'); known"
                    + " schemes: file, memory, redis."),
        e.getMessage());
    IllegalArgumentException noScheme =
        assertThrows(IllegalArgumentException.class, () -> MetadataStores.open("/tmp/dir"));
    assertTrue(
        noScheme.getMessage().contains("has no scheme; known schemes: file, memory, redis"),
        noScheme.getMessage());
  }

  @Test
  void passwordsAreRedactedFromMessages() {
    assertEquals("redis://:***@h:6379/2", MetadataStores.redact("redis://:hunter2@h:6379/2"));
    assertEquals("redis://user:***@h:6379", MetadataStores.redact("redis://user:hunter2@h:6379"));
    NoProviderException e =
        assertThrows(
            NoProviderException.class, () -> MetadataStores.open("rediz://:hunter2@h:6379"));
    assertFalse(e.getMessage().contains("hunter2"), e.getMessage());
  }

  /** Test double: a provider for a made-up scheme, registered by hand. */
  private static final class EchoProvider extends MetadataStoreProvider {
    URI opened;
    final boolean available;

    EchoProvider(boolean available) {
      this.available = available;
    }

    @Override
    public String scheme() {
      return "echo";
    }

    @Override
    public boolean isAvailable() {
      return available;
    }

    @Override
    public Throwable unavailabilityCause() {
      return available ? null : new UnsupportedOperationException("echo is switched off");
    }

    @Override
    public MetadataStore open(URI uri) {
      opened = uri;
      return new MemoryMetadataStore("echo");
    }
  }

  @Test
  void aProviderAddedToTheRegistryServesItsScheme() {
    EchoProvider echo = new EchoProvider(true);
    ProviderRegistry<MetadataStoreProvider> registry =
        ProviderRegistry.of(
            MetadataStoreProvider.class,
            "metadata store",
            "mx.metadata",
            "MX_METADATA",
            Settings.of(Map.of(), Map.of()),
            List.of(echo));
    try (MetadataStore s = MetadataStores.open("ECHO:hello/world", registry)) {
      assertEquals(URI.create("ECHO:hello/world"), echo.opened);
      assertEquals("memory:echo", s.uri());
    }
    EchoProvider off = new EchoProvider(false);
    ProviderRegistry<MetadataStoreProvider> offRegistry =
        ProviderRegistry.of(
            MetadataStoreProvider.class,
            "metadata store",
            "mx.metadata",
            "MX_METADATA",
            Settings.of(Map.of(), Map.of()),
            List.of(off));
    NoProviderException e =
        assertThrows(NoProviderException.class, () -> MetadataStores.open("echo:x", offRegistry));
    assertInstanceOf(UnsupportedOperationException.class, e.getCause());
    assertTrue(e.getMessage().contains("echo is switched off"), e.getMessage());
  }
}
