package dev.mx.rl.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.metadata.MetadataStore;
import java.net.URI;
import org.junit.jupiter.api.Test;

/** {@code mx://host:port[?entry-deadline-ms=N]}: the one query parameter, and bad ones named. */
class RefitStoreProviderTest {
  private final RefitStoreProvider provider = new RefitStoreProvider();

  @Test
  void anEntryDeadlineIsTakenAndAnythingElseInTheQueryIsRefusedNamingIt() {
    try (MetadataStore s = provider.open(URI.create("mx://127.0.0.1:1?entry-deadline-ms=60000"))) {
      assertEquals("mx://127.0.0.1:1?entry-deadline-ms=60000", s.uri());
    }
    IllegalArgumentException other =
        assertThrows(
            IllegalArgumentException.class,
            () -> provider.open(URI.create("mx://127.0.0.1:1?timeout=5s")));
    assertTrue(
        other.getMessage().contains("the only query parameter an mx:// store takes is"),
        other.getMessage());
    for (String bad : new String[] {"0", "-5", "2s", "3600001"}) {
      IllegalArgumentException e =
          assertThrows(
              IllegalArgumentException.class,
              () -> provider.open(URI.create("mx://127.0.0.1:1?entry-deadline-ms=" + bad)));
      assertTrue(
          e.getMessage()
              .contains(
                  "entry-deadline-ms '"
                      + bad
                      + "' is not a whole number of milliseconds from 1 to 3600000"),
          e.getMessage());
    }
  }
}
