package dev.mx.digest.safetensors;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The header of a safetensors file without its data ({@link SafetensorsFile#index}): for callers
 * that read tensors' byte ranges themselves, e.g. to digest them in chunks.
 *
 * @param source the file name, as used in messages
 * @param dataStart byte position of the data section in the file (8 + header length)
 * @param metadata the {@code __metadata__} strings in header order
 * @param entries every tensor, in header order
 */
public record SafetensorsIndex(
    String source, long dataStart, Map<String, String> metadata, List<Entry> entries) {

  /** Copies both collections (keeping header order) so the index cannot change. */
  public SafetensorsIndex {
    metadata = Collections.unmodifiableMap(new LinkedHashMap<>(metadata));
    entries = List.copyOf(entries);
  }

  /**
   * One tensor of the header.
   *
   * @param name the tensor name
   * @param dtype its element type
   * @param shape its shape
   * @param begin first data byte, counted from {@link SafetensorsIndex#dataStart()}
   * @param end one past the last data byte, counted the same way
   */
  public record Entry(String name, DType dtype, Shape shape, long begin, long end) {

    /** The tensor's size in bytes. */
    public long byteSize() {
      return end - begin;
    }
  }
}
