package dev.mx.digest.safetensors;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A safetensors dump onto a file system without room (issue 23): the writer fails with an
 * IOException naming the file, the bytes it needs and the bytes free, never a SIGBUS from a mapped
 * page turned into an InternalError, and leaves no file behind.
 */
class SafetensorsWriterFullDiskTest {

  private static final Path FULL_DEVICE = Path.of("/dev/full");

  @TempDir Path dir;

  @Test
  void aWriteTheDeviceRefusesNamesTheFileAndTheBytes() throws IOException {
    // /dev/full answers every write with ENOSPC, as a full disk does.
    assumeTrue(
        Files.isWritable(FULL_DEVICE), "skipped: " + FULL_DEVICE + " is absent or not writable");
    try (Arena arena = Arena.ofConfined();
        FileChannel full = FileChannel.open(FULL_DEVICE, StandardOpenOption.WRITE)) {
      List<SafetensorsTensor> tensors = List.of(tensor(arena, "w", 4096));
      byte[] header = SafetensorsWriter.header(tensors, Map.of());
      long total = Long.BYTES + header.length + 4096L * 4;
      IOException e =
          assertThrows(
              IOException.class,
              () -> SafetensorsWriter.writeTo(full, FULL_DEVICE, header, tensors, total, 1234));
      assertEquals(
          "cannot write /dev/full: no space left on device (needs "
              + total
              + " bytes, 1234 bytes free)",
          e.getMessage());
    }
  }

  @Test
  void aDumpLargerThanTheFreeSpaceFailsBeforeWritingAndKeepsTheOldFile() throws Exception {
    Path mnt = Files.createDirectories(dir.resolve("tmpfs"));
    String cause = run("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", mnt.toString());
    assumeTrue(cause == null, "skipped: cannot mount a 1 MiB tmpfs: " + cause);
    try (Arena arena = Arena.ofConfined()) {
      Path file = mnt.resolve("receiver-0.safetensors");
      SafetensorsWriter.write(file, List.of(tensor(arena, "small", 16)), Map.of());
      byte[] before = Files.readAllBytes(file);

      // 2 MiB of tensor bytes on a 1 MiB file system.
      List<SafetensorsTensor> big = List.of(tensor(arena, "big", 512 * 1024));
      IOException e =
          assertThrows(IOException.class, () -> SafetensorsWriter.write(file, big, Map.of()));
      long needed = Long.BYTES + SafetensorsWriter.header(big, Map.of()).length + 2L * 1024 * 1024;
      long free = Files.getFileStore(mnt).getUsableSpace();
      assertEquals(
          "cannot write "
              + file
              + ": not enough space (needs "
              + needed
              + " bytes, "
              + free
              + " bytes free)",
          e.getMessage());
      assertArrayEquals(before, Files.readAllBytes(file), "the previous dump is untouched");
      try (var files = Files.list(mnt)) {
        assertEquals(List.of(file), files.toList(), "no temporary file left behind");
      }
    } finally {
      String unmounted = run("umount", mnt.toString());
      assertTrue(unmounted == null, "umount " + mnt + ": " + unmounted);
    }
  }

  /** A tensor of {@code floats} f32 values 0, 1, 2, ... in native memory. */
  private static SafetensorsTensor tensor(Arena arena, String name, int floats) {
    MemorySegment data = arena.allocate(4L * floats, 8);
    for (int i = 0; i < floats; i++) {
      data.setAtIndex(ValueLayout.JAVA_FLOAT, i, i);
    }
    return new SafetensorsTensor(name, DType.F32, Shape.of(floats), data);
  }

  /** Runs a command; null when it succeeded, else what it printed (or why it could not start). */
  private static String run(String... command) throws InterruptedException {
    try {
      Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
      assertTrue(p.waitFor(60, TimeUnit.SECONDS), String.join(" ", command) + " did not finish");
      return p.exitValue() == 0 ? null : "exit " + p.exitValue() + ": " + out;
    } catch (IOException e) {
      return e.getMessage();
    }
  }
}
