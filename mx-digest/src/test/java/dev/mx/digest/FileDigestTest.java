package dev.mx.digest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.EOFException;
import java.io.RandomAccessFile;
import java.lang.foreign.MemorySegment;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Chunked reads give the digest of the whole content, and a file that shrinks is an error naming
 * it.
 */
class FileDigestTest {

  @TempDir Path dir;

  @Test
  void chunkedReadsEqualTheDigestOfTheWholeContentAcrossChunkBoundaries() throws Exception {
    byte[] bytes = new byte[FileDigest.CHUNK_BYTES * 2 + 4099];
    new SplittableRandom(7).nextBytes(bytes);
    Path file = dir.resolve("f.bin");
    Files.write(file, bytes);
    String expected = ShardDigest.digest(MemorySegment.ofArray(bytes));
    assertEquals(expected, FileDigest.digest(file, 1));
    assertEquals(expected, FileDigest.digest(file, 2));
    assertEquals(
        expected, FileDigest.digestStream(Channels.newChannel(Files.newInputStream(file)), 1));
    try (FileChannel ch = FileChannel.open(file)) {
      byte[] middle = java.util.Arrays.copyOfRange(bytes, 5, 5 + FileDigest.CHUNK_BYTES + 17);
      assertEquals(
          ShardDigest.digest(MemorySegment.ofArray(middle)),
          FileDigest.digestRange(ch, "f.bin", 5, middle.length, 0));
    }
  }

  @Test
  void aFileTruncatedAfterItsSizeWasTakenFailsNamingIt() throws Exception {
    Path file = dir.resolve("shrinks.bin");
    Files.write(file, new byte[1 << 20]);
    try (FileChannel ch = FileChannel.open(file)) {
      long size = ch.size();
      try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
        f.setLength(1000);
      }
      EOFException e =
          assertThrows(
              EOFException.class, () -> FileDigest.digestRange(ch, "shrinks.bin", 0, size, 1));
      assertTrue(
          e.getMessage().startsWith("shrinks.bin: file shrank while being read"), e.getMessage());
    }
  }

  @Test
  void underAReadLeaseAWriterWaitsUntilTheHolderLetsGoAndTheHolderSeesTheBreak() throws Exception {
    Path file = dir.resolve("leased.bin");
    Files.write(file, new byte[8192]);
    StringBuilder why = new StringBuilder();
    FileLease lease = FileLease.take(file, why::append);
    org.junit.jupiter.api.Assumptions.assumeTrue(
        lease != null, "no read lease on this file system, so mx digest reads instead: " + why);
    try {
      assertTrue(!lease.broken(), "nobody asked to write yet");
      java.util.concurrent.CompletableFuture<Void> writer =
          java.util.concurrent.CompletableFuture.runAsync(
              () -> {
                try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
                  f.setLength(10);
                } catch (java.io.IOException e) {
                  throw new java.io.UncheckedIOException(e);
                }
              });
      // The writer's open breaks the lease (signalled with SIGURG, which this JVM ignores) and
      // waits for it: the file keeps its size meanwhile.
      dev.mx.testing.Eventually.await(
          java.time.Duration.ofSeconds(30), "the writer to break the lease", lease::broken);
      assertEquals(8192, Files.size(file));
      assertTrue(!writer.isDone(), "the writer waits while the lease is held");
      lease.close();
      writer.get(30, java.util.concurrent.TimeUnit.SECONDS);
      assertEquals(10, Files.size(file));
    } finally {
      lease.close();
    }
  }

  @Test
  void aMappedFileDigestsAsItsBytes() throws Exception {
    byte[] bytes = new byte[3 * (1 << 20) + 4099];
    new SplittableRandom(8).nextBytes(bytes);
    Path file = dir.resolve("mapped.bin");
    Files.write(file, bytes);
    assertEquals(ShardDigest.digest(MemorySegment.ofArray(bytes)), FileDigest.digest(file, 2));
  }
}
