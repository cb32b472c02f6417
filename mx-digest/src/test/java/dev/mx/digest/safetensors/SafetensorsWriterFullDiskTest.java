package dev.mx.digest.safetensors;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.testing.SmallTmpfs;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Map;
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
    try (SmallTmpfs tmpfs = SmallTmpfs.mount(Files.createDirectories(dir.resolve("tmpfs")), "1m");
        Arena arena = Arena.ofConfined()) {
      Path file = tmpfs.dir().resolve("receiver-0.safetensors");
      SafetensorsWriter.write(file, List.of(tensor(arena, "small", 16)), Map.of());
      byte[] before = Files.readAllBytes(file);

      // 2 MiB of tensor bytes on a 1 MiB file system.
      List<SafetensorsTensor> big = List.of(tensor(arena, "big", 512 * 1024));
      IOException e =
          assertThrows(IOException.class, () -> SafetensorsWriter.write(file, big, Map.of()));
      long needed = Long.BYTES + SafetensorsWriter.header(big, Map.of()).length + 2L * 1024 * 1024;
      long free = Files.getFileStore(tmpfs.dir()).getUsableSpace();
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
      try (var files = Files.list(tmpfs.dir())) {
        assertEquals(List.of(file), files.toList(), "no temporary file left behind");
      }
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
}
