package dev.mx.metadata;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.SourceRecord;
import dev.mx.api.metadata.SourceStatus;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The {@code file:} store is owner-only whatever the umask, and refuses a folder other users can
 * write: otherwise any local user could rewrite the version documents and tables receivers install.
 */
class FileStorePermissionsTest {
  @TempDir Path dir;

  /** A child JVM under {@code umask 000} writes a table, a heartbeat and a version. */
  public static final class UmaskZeroWriter {
    public static void main(String[] args) {
      try (MetadataStore store = MetadataStores.open("file:" + args[0])) {
        store.publish(
            new SourceRecord(
                "model=perm;role=trainer",
                "w0",
                0,
                ShardTableCodec.standard().encode(TestTables.table("w0", 2, 3L, true)),
                SourceStatus.READY,
                0));
        store.heartbeat("model=perm;role=trainer", "w0", SourceStatus.READY);
        store.versions().createVersion("perm", "v1", 1, List.of("0"));
      }
    }
  }

  @Test
  void underUmaskZeroEveryFolderAndFileIsOwnerOnly() throws Exception {
    Path store = dir.resolve("nested/store");
    Path java = Path.of(System.getProperty("java.home"), "bin", "java");
    Process child =
        new ProcessBuilder(
                "bash",
                "-c",
                "umask 000 && exec \"$@\"",
                "umask-000",
                java.toString(),
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                "-cp",
                System.getProperty("java.class.path"),
                UmaskZeroWriter.class.getName(),
                store.toString())
            .redirectErrorStream(true)
            .start();
    String out = new String(child.getInputStream().readAllBytes());
    assertEquals(0, child.waitFor(), out);

    List<Path> wide = new ArrayList<>();
    int seen = 0;
    try (Stream<Path> all = Files.walk(dir.resolve("nested"))) {
      for (Path p : (Iterable<Path>) all::iterator) {
        seen++;
        Set<PosixFilePermission> mode = Files.getPosixFilePermissions(p);
        if (mode.stream()
            .anyMatch(m -> m.name().startsWith("GROUP_") || m.name().startsWith("OTHERS_"))) {
          wide.add(p);
        }
      }
    }
    // nested, store, the identity folder with its blob and state, the model folder with its lock,
    // the version folder with its document.
    assertTrue(seen >= 9, "walked " + seen + " paths");
    assertEquals(List.of(), wide, "paths with group or other permissions");
  }

  @Test
  void aStoreFolderOthersCanWriteIsRefusedNamingIt() throws Exception {
    Path store = Files.createDirectory(dir.resolve("open-store"));
    Files.setPosixFilePermissions(store, PosixFilePermissions.fromString("rwxrwxrwx"));
    MetadataStoreException e =
        assertThrows(MetadataStoreException.class, () -> MetadataStores.open("file:" + store));
    assertTrue(
        e.getMessage().contains(store + " is writable by other users (mode rwxrwxrwx)"),
        e.getMessage());
    assertTrue(e.getMessage().contains("chmod go-w " + store), e.getMessage());

    Files.setPosixFilePermissions(store, PosixFilePermissions.fromString("rwxr-xr-x"));
    try (MetadataStore ok = MetadataStores.open("file:" + store)) {
      assertEquals("file:" + store, ok.uri());
    }
  }
}
