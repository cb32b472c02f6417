package dev.mx.digest;

import java.io.EOFException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.ReadableByteChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * The shard digest of a file's bytes. A regular file is mapped and digested in place, under a read
 * lease ({@link FileLease}): another process that truncates the file or opens it for writing then
 * waits until the digest is done or has stopped, so the mapping cannot lose its pages under the
 * digest (a SIGBUS there kills the JVM); a broken lease is an {@link IOException} naming the file.
 * Where no lease can be had (another process has the file open for writing, another owner's file, a
 * file system without leases, not Linux), the file is read with plain reads into one reused
 * off-heap chunk instead: a read that comes back short is an {@link IOException} naming the file.
 * Reading also works for what has no size: pipes, standard input, procfs files.
 *
 * <p>Each chunk is digested on up to {@code threads} threads like {@link
 * ShardDigest#digest(MemorySegment, int)}; the result equals {@link
 * ShardDigest#digest(MemorySegment)} of the whole content.
 */
public final class FileDigest {

  /**
   * Bytes read per chunk: small enough that the digest reads a chunk from cache right after the
   * read wrote it (so the file's bytes cross memory once), large enough that a read call costs
   * little.
   */
  public static final int CHUNK_BYTES = 1 << 20;

  private FileDigest() {}

  /**
   * Bytes of a mapping digested between two checks of the lease: a few milliseconds, far inside the
   * lease-break time a writer waits.
   */
  static final long MAPPED_CHUNK_BYTES = 256L << 20;

  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(FileDigest.class);

  /**
   * The digest of the file at {@code path}: a regular file mapped under a read lease (or, without
   * one, by positional reads) of the size it has when opened, anything else (and a "regular" file
   * of size 0, as procfs reports) streamed to its end.
   *
   * @throws IOException naming the file when it cannot be read, shrinks while it is read, or
   *     another process truncates or writes it while it is mapped
   */
  public static String digest(Path path, int threads) throws IOException {
    try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ)) {
      long size = channel.size();
      // procfs and sysfs files are "regular" with size 0 but have content: stream those too.
      if (Files.isRegularFile(path) && size > 0) {
        return digestRegular(path, channel, size, threads);
      }
      return digestStream(channel, threads);
    }
  }

  /**
   * The digest of the first {@code size} bytes of the regular file {@code path}, open as {@code
   * channel}: mapped under a read lease, or read when no lease can be had.
   *
   * @throws IOException naming the file as {@link #digest(Path, int)}
   */
  public static String digestRegular(Path path, FileChannel channel, long size, int threads)
      throws IOException {
    String mapped = digestMapped(path, channel, size, threads);
    return mapped != null ? mapped : digestRange(channel, path.toString(), 0, size, threads);
  }

  /**
   * The digest of the first {@code size} bytes of {@code path}, mapped under a read lease; null
   * when no lease can be had (the caller reads the file instead).
   */
  private static String digestMapped(Path path, FileChannel channel, long size, int threads)
      throws IOException {
    try (FileLease lease =
        FileLease.take(path, why -> LOG.debug("{}: read, not mapped: {}", path, why))) {
      if (lease == null) {
        return null;
      }
      // The size now, under the lease: nobody can shrink the file until it is released.
      long now = channel.size();
      if (now < size) {
        throw new EOFException(
            path + ": file shrank while being read: expected " + size + " bytes but it has " + now);
      }
      StreamingDigest digest = new StreamingDigest();
      try (Arena arena = Arena.ofShared()) {
        MemorySegment mapping = channel.map(FileChannel.MapMode.READ_ONLY, 0, size, arena);
        for (long at = 0; at < size; at += MAPPED_CHUNK_BYTES) {
          if (lease.broken()) {
            throw new IOException(
                path
                    + ": another process truncated or opened it for writing while it was being"
                    + " digested (after "
                    + at
                    + " of "
                    + size
                    + " bytes)");
          }
          MemorySegment chunk = mapping.asSlice(at, Math.min(MAPPED_CHUNK_BYTES, size - at));
          FileLease.populate(chunk);
          update(digest, chunk, threads);
        }
      }
      return digest.digest();
    }
  }

  /**
   * The digest of {@code length} bytes of {@code channel} from {@code offset}.
   *
   * @param name the file name for messages
   * @throws EOFException naming the file when it ends before {@code offset + length} (it was
   *     truncated)
   */
  public static String digestRange(
      FileChannel channel, String name, long offset, long length, int threads) throws IOException {
    if (offset < 0 || length < 0) {
      throw new IllegalArgumentException(
          name + ": negative offset " + offset + " or length " + length);
    }
    StreamingDigest digest = new StreamingDigest();
    long chunkBytes = Math.min(CHUNK_BYTES, Math.max(length, 1));
    // Two chunks: the next one is read on another thread while this one is digested.
    try (Arena arena = Arena.ofShared()) {
      MemorySegment[] chunks = {arena.allocate(chunkBytes, 4096), arena.allocate(chunkBytes, 4096)};
      CompletableFuture<Integer> pending =
          length == 0
              ? null
              : readAsync(
                  channel, name, chunks[0], offset, (int) Math.min(chunkBytes, length), length, 0);
      try {
        long done = 0;
        int current = 0;
        while (done < length) {
          int n = join(pending);
          long next = done + n;
          pending =
              next < length
                  ? readAsync(
                      channel,
                      name,
                      chunks[1 - current],
                      offset + next,
                      (int) Math.min(chunkBytes, length - next),
                      length,
                      next)
                  : null;
          update(digest, chunks[current].asSlice(0, n), threads);
          done = next;
          current = 1 - current;
        }
      } finally {
        if (pending != null) {
          // Never free a chunk a read is still filling.
          pending.handle((n, e) -> n).join();
        }
      }
    }
    return digest.digest();
  }

  private static CompletableFuture<Integer> readAsync(
      FileChannel channel,
      String name,
      MemorySegment chunk,
      long position,
      int want,
      long length,
      long done) {
    return CompletableFuture.supplyAsync(
        () -> {
          ByteBuffer buffer = chunk.asByteBuffer().limit(want);
          try {
            while (buffer.hasRemaining()) {
              if (channel.read(buffer, position + buffer.position()) < 0) {
                throw new EOFException(
                    name
                        + ": file shrank while being read: expected "
                        + length
                        + " bytes but it "
                        + "ends after "
                        + (done + buffer.position())
                        + " of them");
              }
            }
          } catch (IOException e) {
            throw new UncheckedIOException(e);
          }
          return want;
        },
        ParallelRows.pool());
  }

  private static int join(CompletableFuture<Integer> read) throws IOException {
    try {
      return read.join();
    } catch (CompletionException e) {
      if (e.getCause() instanceof UncheckedIOException u) {
        throw u.getCause();
      }
      throw e;
    }
  }

  /**
   * The digest of everything {@code in} delivers until its end (a pipe, a FIFO, standard input).
   */
  public static String digestStream(ReadableByteChannel in, int threads) throws IOException {
    StreamingDigest digest = new StreamingDigest();
    try (Arena arena = Arena.ofShared()) {
      MemorySegment chunk = arena.allocate(CHUNK_BYTES, 4096);
      ByteBuffer buffer = chunk.asByteBuffer();
      boolean end = false;
      while (!end) {
        buffer.clear();
        while (buffer.hasRemaining()) {
          if (in.read(buffer) < 0) {
            end = true;
            break;
          }
        }
        if (buffer.position() > 0) {
          update(digest, chunk.asSlice(0, buffer.position()), threads);
        }
      }
    }
    return digest.digest();
  }

  private static void update(StreamingDigest digest, MemorySegment bytes, int threads) {
    if (threads < 0) {
      throw new IllegalArgumentException(
          "threads must be 0 (all processors) or positive, got " + threads);
    }
    int wanted = threads == 0 ? Runtime.getRuntime().availableProcessors() : threads;
    long rows = bytes.byteSize() / ShardDigest.ROW_BYTES;
    int tasks = (int) Math.min(wanted, Math.max(1, rows / ShardDigest.MIN_ROWS_PER_THREAD));
    if (tasks <= 1) {
      digest.update(bytes);
    } else {
      digest.update(bytes, ParallelRows.pool(), tasks);
    }
  }
}
