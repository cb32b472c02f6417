package dev.mx.digest.safetensors;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Writes named tensors as a safetensors file that {@link SafetensorsFile} (and the reference
 * readers) accept: tensors in the given order, packed back to back, the header padded with spaces
 * so the data starts at a multiple of 8 bytes. The file is written with channel writes (native
 * tensor bytes go to the file without a heap copy) into a temporary sibling and renamed into place,
 * so a reader never sees a half-written file. It is not written through a mapping: a store into a
 * mapped page the file system cannot back (a full disk) is a SIGBUS the JVM reports as an {@link
 * InternalError}, while a write reports it as an {@link IOException}, which names the file, the
 * bytes needed and the bytes free.
 */
public final class SafetensorsWriter {

  private static final ObjectMapper JSON = new ObjectMapper();

  /** Tensor bytes go out in slices of this size: a ByteBuffer holds at most 2 GiB. */
  private static final long CHUNK_BYTES = 16L << 20;

  private SafetensorsWriter() {}

  /**
   * Writes {@code tensors} (names unique, none called {@code __metadata__}) and {@code metadata}
   * (sorted by key unless the map has an order of its own, so the output is deterministic) to
   * {@code path}, replacing it.
   *
   * @throws IllegalArgumentException naming the tensor when a name repeats or is reserved
   * @throws IOException when the file cannot be written
   */
  public static void write(Path path, List<SafetensorsTensor> tensors, Map<String, String> metadata)
      throws IOException {
    byte[] header = header(tensors, metadata);
    long total = Long.BYTES + (long) header.length;
    for (SafetensorsTensor t : tensors) {
      total = Math.addExact(total, t.byteSize());
    }
    // A sibling created with the default permissions (createTempFile would make it owner-only).
    Path temp =
        path.resolveSibling(
            "."
                + path.getFileName()
                + "."
                + ProcessHandle.current().pid()
                + "."
                + System.nanoTime()
                + ".tmp");
    long free = usableSpace(path);
    if (free >= 0 && free < total) {
      throw new IOException(cannotWrite(path, "not enough space", total, free));
    }
    try {
      try (FileChannel channel =
          FileChannel.open(temp, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
        writeTo(channel, path, header, tensors, total, free);
      }
      try {
        Files.move(temp, path, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
      } catch (AtomicMoveNotSupportedException e) {
        Files.move(temp, path, StandardCopyOption.REPLACE_EXISTING);
      }
    } finally {
      Files.deleteIfExists(temp);
    }
  }

  /**
   * Writes the length prefix, {@code header} and every tensor's bytes to {@code out} in order; a
   * failure names {@code path} (the file the bytes are for), the {@code total} bytes needed and the
   * bytes {@code free} before writing (-1: unknown).
   */
  static void writeTo(
      FileChannel out,
      Path path,
      byte[] header,
      List<SafetensorsTensor> tensors,
      long total,
      long free)
      throws IOException {
    try {
      ByteBuffer prefix = ByteBuffer.allocate(Long.BYTES).order(ByteOrder.LITTLE_ENDIAN);
      prefix.putLong(0, header.length);
      writeFully(out, prefix);
      writeFully(out, ByteBuffer.wrap(header));
      for (SafetensorsTensor t : tensors) {
        MemorySegment data = t.data();
        for (long at = 0; at < data.byteSize(); at += CHUNK_BYTES) {
          writeFully(
              out, data.asSlice(at, Math.min(CHUNK_BYTES, data.byteSize() - at)).asByteBuffer());
        }
      }
    } catch (IOException e) {
      throw new IOException(cannotWrite(path, reason(e), total, free), e);
    }
  }

  private static void writeFully(FileChannel out, ByteBuffer bytes) throws IOException {
    while (bytes.hasRemaining()) {
      out.write(bytes);
    }
  }

  /**
   * The bytes free for this process on {@code path}'s file system, or -1 where the file system does
   * not say (pseudo file systems report a total of 0).
   */
  private static long usableSpace(Path path) throws IOException {
    Path dir = path.toAbsolutePath().getParent();
    FileStore store = Files.getFileStore(dir);
    return store.getTotalSpace() > 0 ? store.getUsableSpace() : -1;
  }

  private static String cannotWrite(Path path, String reason, long needed, long free) {
    return "cannot write "
        + path
        + ": "
        + reason
        + " (needs "
        + needed
        + " bytes, "
        + (free >= 0 ? free + " bytes free" : "free space unknown")
        + ")";
  }

  /** The system's reason ("No space left on device") in the lower case of our messages. */
  private static String reason(IOException e) {
    String m = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
    return m.isEmpty() ? m : Character.toLowerCase(m.charAt(0)) + m.substring(1);
  }

  /**
   * The JSON header for {@code tensors} packed in order, padded with spaces to end on an 8-byte
   * boundary.
   */
  static byte[] header(List<SafetensorsTensor> tensors, Map<String, String> metadata) {
    ObjectNode root = JSON.createObjectNode();
    if (!metadata.isEmpty()) {
      ObjectNode meta = root.putObject(SafetensorsFile.METADATA_KEY);
      // A map without an order (Map.of, HashMap) iterates differently from run to run; sort it so
      // that the
      // same content always gives byte-identical files. An ordered map keeps its order.
      (metadata instanceof java.util.SequencedMap<String, String>
              ? metadata
              : new java.util.TreeMap<>(metadata))
          .forEach(meta::put);
    }
    Set<String> seen = new HashSet<>();
    long offset = 0;
    for (SafetensorsTensor t : tensors) {
      if (t.name().equals(SafetensorsFile.METADATA_KEY)) {
        throw new IllegalArgumentException(
            "tensor name '" + t.name() + "' is reserved for the metadata");
      }
      if (!seen.add(t.name())) {
        throw new IllegalArgumentException("tensor '" + t.name() + "' is given twice");
      }
      ObjectNode entry = root.putObject(t.name());
      entry.put("dtype", t.dtype().safetensorsName());
      ArrayNode shape = entry.putArray("shape");
      Arrays.stream(t.shape().dims()).forEach(shape::add);
      entry.putArray("data_offsets").add(offset).add(offset + t.byteSize());
      offset += t.byteSize();
    }
    byte[] json;
    try {
      json = JSON.writeValueAsString(root).getBytes(StandardCharsets.UTF_8);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("cannot serialise a safetensors header", e);
    }
    int padded = (json.length + 7) & ~7;
    byte[] header = Arrays.copyOf(json, padded);
    Arrays.fill(header, json.length, padded, (byte) ' ');
    return header;
  }
}
