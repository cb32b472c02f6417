package dev.mx.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.digest.GoldenVectors;
import dev.mx.digest.ShardDigest;
import dev.mx.digest.safetensors.SafetensorsTensor;
import dev.mx.digest.safetensors.SafetensorsWriter;
import dev.mx.testing.Eventually;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code mx digest} on inputs that are not plain files (standard input, a FIFO, procfs), names that
 * hold a newline, and a file truncated while it is being digested: real processes, exit codes
 * asserted.
 */
class DigestInputsTest {

  @TempDir Path dir;

  private static final GoldenVectors.Vector ROWS =
      GoldenVectors.all().stream().filter(v -> v.input().length > 1024).findFirst().orElseThrow();

  @Test
  void dashReadsStandardInput() throws Exception {
    CliProcess.Run r = CliProcess.run(dir, ROWS.input(), "digest", "-");
    assertEquals(0, r.code(), r.err());
    assertEquals(List.of(ROWS.digest() + "  -"), r.outLines());
  }

  /**
   * Fault catalogue D33, D34, C49: a FIFO with no writer, {@code /dev/zero} and {@code /dev/full}
   * used to block until killed. They are refused before they are opened, naming the file and what
   * it is, for plain and safetensors digests alike.
   */
  @Test
  void aFifoOrCharacterDeviceIsRefusedNamingItInsteadOfHanging() throws Exception {
    Path fifo = dir.resolve("pipe");
    Process mkfifo = new ProcessBuilder("mkfifo", fifo.toString()).inheritIO().start();
    assertEquals(0, mkfifo.waitFor());
    for (List<String> args :
        List.of(
            List.of("digest", "pipe"),
            List.of("digest", "--safetensors", "pipe"),
            List.of("digest", "/dev/zero"),
            List.of("digest", "/dev/full"))) {
      CliProcess.Run r = CliProcess.run(dir, null, args.toArray(String[]::new));
      String file = args.getLast();
      String kind = file.equals("pipe") ? "FIFO" : "character device";
      assertEquals(1, r.code(), args + ": " + r.err());
      assertTrue(
          r.err().contains(file + ": is a " + kind + ", not a regular file"),
          args + ": " + r.err());
      assertTrue(r.err().contains("mx digest - < " + file), r.err());
    }
  }

  @Test
  void aProcfsFileOfSizeZeroIsDigestedOverItsContent() throws Exception {
    Path version = Path.of("/proc/version");
    org.junit.jupiter.api.Assumptions.assumeTrue(
        Files.isReadable(version), "no /proc/version on this OS");
    byte[] content = Files.readAllBytes(version);
    String expected = ShardDigest.digest(MemorySegment.ofArray(content));
    assertNotEquals(ShardDigest.digest(MemorySegment.ofArray(new byte[0])), expected);
    CliProcess.Run r = CliProcess.run(dir, null, "digest", "/proc/version");
    assertEquals(0, r.code(), r.err());
    assertEquals(List.of(expected + "  /proc/version"), r.outLines());
  }

  @Test
  void aTensorNameWithANewlineStaysOnOneEscapedLine() throws Exception {
    byte[] bytes = GoldenVectors.input("bytes-0-9");
    SafetensorsWriter.write(
        dir.resolve("w.safetensors"),
        List.of(
            new SafetensorsTensor(
                "two\nlines", DType.U8, Shape.of(10), MemorySegment.ofArray(bytes)),
            new SafetensorsTensor(
                "back\\slash", DType.U8, Shape.of(10), MemorySegment.ofArray(bytes)),
            new SafetensorsTensor("plain", DType.U8, Shape.of(10), MemorySegment.ofArray(bytes))),
        Map.of());
    String d = ShardDigest.digest(MemorySegment.ofArray(bytes));
    CliProcess.Run r = CliProcess.run(dir, null, "digest", "--safetensors", "w.safetensors");
    assertEquals(0, r.code(), r.err());
    assertEquals(
        List.of(
            "\\" + d + "  w.safetensors:two\\nlines",
            "\\" + d + "  w.safetensors:back\\\\slash",
            d + "  w.safetensors:plain"),
        r.outLines());
  }

  @Test
  void aFileTruncatedWhileBeingDigestedIsAnErrorNamingItNotACrash() throws Exception {
    Path big = dir.resolve("big.bin");
    try (RandomAccessFile f = new RandomAccessFile(big.toFile(), "rw")) {
      f.setLength(8L << 30); // sparse: no disk space, but seconds of reading
    }
    assertTruncationIsNamed(big, "digest", "--threads", "1", "big.bin");
  }

  @Test
  void aSafetensorsFileTruncatedWhileBeingDigestedIsAnErrorNamingIt() throws Exception {
    Path big = dir.resolve("big.safetensors");
    long size = 8L << 30;
    byte[] header =
        ("{\"w\":{\"dtype\":\"U8\",\"shape\":[" + size + "],\"data_offsets\":[0," + size + "]}}")
            .getBytes(StandardCharsets.UTF_8);
    try (RandomAccessFile f = new RandomAccessFile(big.toFile(), "rw")) {
      f.write(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(header.length).array());
      f.write(header);
      f.setLength(8 + header.length + size);
    }
    assertTruncationIsNamed(big, "digest", "--threads", "1", "--safetensors", "big.safetensors");
  }

  /**
   * Truncates {@code file} once the process has it open and is digesting it, then expects exit 1
   * naming it. A plain file is mapped under a read lease: the truncation waits until the digest has
   * stopped; where no lease can be had it is read, and the read comes back short. A safetensors
   * file is read.
   */
  private void assertTruncationIsNamed(Path file, String... args) throws Exception {
    Process p = CliProcess.start(dir, args);
    Eventually.await(
        Eventually.PROCESS_START, "mx digest to open " + file, () -> hasOpen(p.pid(), file));
    // Past open and size, into the digest of 8 GiB: the file mapped, or 64 MiB more read than at
    // the open (the reads are pread calls, which /proc/PID/io counts; loading classes adds far
    // less).
    long atOpen = bytesRead(p.pid());
    Eventually.await(
        Eventually.PROCESS_START,
        "mx digest to map " + file + " or read 64 MiB of it",
        () -> !p.isAlive() || hasMapped(p.pid(), file) || bytesRead(p.pid()) - atOpen >= 64L << 20);
    assertTrue(p.isAlive(), "mx digest ended before the file was truncated");
    try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
      f.setLength(1 << 20);
    }
    CliProcess.Run r = CliProcess.finish(dir, p, args);
    assertEquals(1, r.code(), "exit " + r.code() + ", stderr: " + r.err());
    String name = file.getFileName().toString();
    assertTrue(
        r.err().contains("mx digest: error: " + name + ": file shrank while being read")
            || r.err()
                .contains(
                    "mx digest: error: "
                        + name
                        + ": another process truncated or opened it for writing while it was"
                        + " being digested"),
        r.err());
    assertTrue(!r.err().contains("Exception") && !r.err().contains("Internal Error"), r.err());
  }

  /** Whether the process maps {@code file} ({@code /proc/PID/maps}). */
  private static boolean hasMapped(long pid, Path file) {
    try {
      String target = file.toRealPath().toString();
      return Files.readAllLines(Path.of("/proc/" + pid + "/maps")).stream()
          .anyMatch(l -> l.endsWith(target));
    } catch (java.io.IOException e) {
      return false; // the process ended
    }
  }

  /** Bytes the process read through system calls so far ({@code rchar} of /proc/PID/io). */
  private static long bytesRead(long pid) {
    try {
      for (String line : Files.readAllLines(Path.of("/proc/" + pid + "/io"))) {
        if (line.startsWith("rchar:")) {
          return Long.parseLong(line.substring("rchar:".length()).trim());
        }
      }
      throw new IllegalStateException("/proc/" + pid + "/io has no rchar line");
    } catch (IOException e) {
      return -1; // the process ended; the caller checks isAlive
    }
  }

  private static boolean hasOpen(long pid, Path file) {
    try (var fds = Files.list(Path.of("/proc/" + pid + "/fd"))) {
      return fds.anyMatch(
          fd -> {
            try {
              return Files.readSymbolicLink(fd).equals(file.toAbsolutePath());
            } catch (IOException e) {
              return false;
            }
          });
    } catch (IOException e) {
      return false;
    }
  }
}
