package dev.mx.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.testing.SmallTmpfs;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code mx demo --dump} onto a file system without room (issue 23): exit 1 with one line naming
 * the file and the space it needs, never an InternalError from a SIGBUS in a mapped page.
 */
class DemoDumpFullDiskTest {

  @TempDir Path dir;

  @Test
  void aDumpOntoAFullFileSystemNamesTheFileAndTheMissingSpace() throws Exception {
    try (SmallTmpfs tmpfs = SmallTmpfs.mount(Files.createDirectories(dir.resolve("mnt")), "64k")) {
      Path dump = tmpfs.dir().resolve("dump");
      CliProcess.Run r =
          CliProcess.run(
              dir,
              null,
              "demo",
              "--in-process",
              "--model",
              "tiny-llama",
              "--steps",
              "1",
              "--dump",
              dump.toString());
      assertEquals(1, r.code(), r.err());
      List<String> errors = r.err().lines().filter(l -> l.startsWith("mx demo: error: ")).toList();
      assertEquals(1, errors.size(), r.err());
      String error = errors.get(0);
      assertTrue(
          error.matches(
              "mx demo: error: dump to "
                  + dump
                  + " failed: receiver \\d: cannot write "
                  + dump
                  + "/receiver-\\d\\.safetensors: not enough space \\(needs \\d+ bytes, \\d+ bytes"
                  + " free\\)"),
          error);
      assertFalse(r.err().contains("InternalError") || r.err().contains("\tat "), r.err());
      try (var left = Files.list(dump)) {
        assertEquals(List.of(), left.toList(), "no partial or temporary file left behind");
      }
    }
  }
}
