package dev.mx.digest.safetensors;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
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
 * so the data starts at a multiple of 8 bytes. The file is written through a mapping (tensor bytes
 * are copied memory to memory, never through the heap) into a temporary sibling and renamed into
 * place, so a reader never sees a half-written file.
 */
public final class SafetensorsWriter {

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final ValueLayout.OfLong U64 =
      ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

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
    try {
      try (FileChannel channel =
              FileChannel.open(
                  temp,
                  StandardOpenOption.CREATE_NEW,
                  StandardOpenOption.READ,
                  StandardOpenOption.WRITE);
          Arena arena = Arena.ofConfined()) {
        MemorySegment out = channel.map(FileChannel.MapMode.READ_WRITE, 0, total, arena);
        out.set(U64, 0, header.length);
        MemorySegment.copy(MemorySegment.ofArray(header), 0, out, Long.BYTES, header.length);
        long at = Long.BYTES + (long) header.length;
        for (SafetensorsTensor t : tensors) {
          MemorySegment.copy(t.data(), 0, out, at, t.byteSize());
          at += t.byteSize();
        }
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
