package dev.mx.digest.safetensors;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import dev.mx.api.DType;
import dev.mx.api.Shape;
import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A safetensors file: its header parsed and its bytes in one off-heap {@link MemorySegment}, each
 * tensor's data a slice of it. {@link #open} reads the file rather than mapping it: a mapped file
 * that another process truncates kills the JVM with SIGBUS on the next access, a read merely comes
 * back short and becomes an error naming the file. {@link #index} parses the header alone, for
 * callers that stream the tensors' byte ranges (e.g. {@link dev.mx.digest.FileDigest#digestRange}).
 *
 * <p>Format: an unsigned 64-bit little-endian header length {@code N}, {@code N} bytes of UTF-8
 * JSON (an object mapping tensor names to {@code {"dtype", "shape", "data_offsets": [begin, end]}}
 * plus an optional {@code "__metadata__"} object of strings), then the data; offsets count from the
 * first byte after the header. Tensors are kept in header order. Rejected, with the file and tensor
 * named: a truncated file, a header over {@value #MAX_HEADER_BYTES} bytes, malformed JSON or
 * duplicate keys, an unknown dtype, offsets outside the data, overlapping tensors, and a byte range
 * whose size is not shape &times; element size. Gaps between tensors and bytes after the last one
 * are tolerated.
 */
public final class SafetensorsFile implements AutoCloseable {

  /** The largest header accepted (as in the reference implementation). */
  public static final long MAX_HEADER_BYTES = 100_000_000L;

  /** The header key of the free-form string metadata. */
  public static final String METADATA_KEY = "__metadata__";

  private static final ValueLayout.OfLong U64 =
      ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
  private static final ObjectMapper JSON =
      JsonMapper.builder()
          .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
          .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
          .build();

  private final String source;
  private final Arena arena;
  private final long dataStart;
  private final Map<String, String> metadata;
  private final List<SafetensorsTensor> tensors;
  private final Map<String, SafetensorsTensor> byName;
  private final AtomicBoolean closed = new AtomicBoolean();

  private SafetensorsFile(
      String source,
      Arena arena,
      long dataStart,
      Map<String, String> metadata,
      List<SafetensorsTensor> tensors) {
    this.source = source;
    this.arena = arena;
    this.dataStart = dataStart;
    this.metadata = metadata;
    this.tensors = tensors;
    Map<String, SafetensorsTensor> names = new LinkedHashMap<>();
    for (SafetensorsTensor t : tensors) {
      names.put(t.name(), t);
    }
    this.byName = names;
  }

  /**
   * Reads {@code path} into off-heap memory (a shared arena, so several threads may digest its
   * tensors) and parses its header. The memory lives until {@link #close()}.
   *
   * @param path the file to read
   * @return the parsed file
   * @throws IOException when the file cannot be read, or shrinks while it is read (the message
   *     names it)
   * @throws SafetensorsException when it is not a valid safetensors file
   */
  @SuppressWarnings("MustBeClosedChecker") // the returned file owns the arena; close() closes it
  public static SafetensorsFile open(Path path) throws IOException {
    Arena arena = Arena.ofShared();
    try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ)) {
      long size = channel.size();
      MemorySegment bytes = arena.allocate(Math.max(size, 1), 4096).asSlice(0, size);
      readFully(channel, bytes, 0, path.toString());
      return parse(bytes.asReadOnly(), path.toString(), arena);
    } catch (IOException | RuntimeException | Error e) {
      arena.close();
      throw e;
    }
  }

  /**
   * Parses the header of {@code path} without reading its data: every tensor's name, dtype, shape
   * and byte range, checked against the file's size as {@link #open} checks them.
   *
   * @param path the file to read the header of
   * @return the header
   * @throws IOException when the file cannot be read or ends inside its header
   * @throws SafetensorsException when the header is not valid
   */
  public static SafetensorsIndex index(Path path) throws IOException {
    String source = path.toString();
    try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ);
        Arena arena = Arena.ofConfined()) {
      long size = channel.size();
      MemorySegment length = arena.allocate(Long.BYTES);
      if (size < Long.BYTES) {
        throw new SafetensorsException(
            source, null, "truncated: " + size + " bytes, too short for the 8-byte header length");
      }
      readFully(channel, length, 0, source);
      long headerLength = checkHeaderLength(source, length.get(U64, 0), size);
      MemorySegment header = arena.allocate(Math.max(headerLength, 1)).asSlice(0, headerLength);
      readFully(channel, header, Long.BYTES, source);
      Header h =
          parseHeader(
              source, header.toArray(ValueLayout.JAVA_BYTE), size - Long.BYTES - headerLength);
      List<SafetensorsIndex.Entry> entries = new ArrayList<>(h.entries.size());
      for (Entry e : h.entries) {
        entries.add(new SafetensorsIndex.Entry(e.name, e.dtype, e.shape, e.begin, e.end));
      }
      return new SafetensorsIndex(source, Long.BYTES + headerLength, h.metadata, entries);
    }
  }

  /**
   * Fills {@code into} from {@code channel} at {@code position}; a short file is an error naming
   * it.
   */
  private static void readFully(
      FileChannel channel, MemorySegment into, long position, String source) throws IOException {
    long done = 0;
    long total = into.byteSize();
    while (done < total) {
      // ByteBuffer views are int-sized: read files over 2 GiB in pieces.
      int piece = (int) Math.min(total - done, 1 << 30);
      ByteBuffer buffer = into.asSlice(done, piece).asByteBuffer();
      while (buffer.hasRemaining()) {
        if (channel.read(buffer, position + done + buffer.position()) < 0) {
          throw new EOFException(
              source
                  + ": file shrank while being read: expected "
                  + total
                  + " bytes from "
                  + "offset "
                  + position
                  + " but it ends after "
                  + (done + buffer.position()));
        }
      }
      done += piece;
    }
  }

  /**
   * Parses a safetensors image already in memory; the tensors are slices of {@code bytes}, which
   * the caller keeps alive ({@link #close()} releases nothing).
   *
   * @param source the name used in error messages, e.g. the file name
   */
  public static SafetensorsFile parse(MemorySegment bytes, String source) {
    return parse(bytes, source, null);
  }

  private static SafetensorsFile parse(MemorySegment bytes, String source, Arena arena) {
    long size = bytes.byteSize();
    if (size < Long.BYTES) {
      throw new SafetensorsException(
          source, null, "truncated: " + size + " bytes, too short for the 8-byte header length");
    }
    long headerLength = checkHeaderLength(source, bytes.get(U64, 0), size);
    byte[] header = bytes.asSlice(Long.BYTES, headerLength).toArray(ValueLayout.JAVA_BYTE);
    long dataStart = Long.BYTES + headerLength;
    Header h = parseHeader(source, header, size - dataStart);
    List<SafetensorsTensor> tensors = new ArrayList<>(h.entries.size());
    for (Entry e : h.entries) {
      tensors.add(
          new SafetensorsTensor(
              e.name, e.dtype, e.shape, bytes.asSlice(dataStart + e.begin, e.end - e.begin)));
    }
    return new SafetensorsFile(source, arena, dataStart, h.metadata, List.copyOf(tensors));
  }

  private static long checkHeaderLength(String source, long headerLength, long size) {
    if (headerLength < 0 || headerLength > MAX_HEADER_BYTES) {
      throw new SafetensorsException(
          source,
          null,
          "header length "
              + Long.toUnsignedString(headerLength)
              + " exceeds the limit of "
              + MAX_HEADER_BYTES
              + " bytes");
    }
    if (headerLength > size - Long.BYTES) {
      throw new SafetensorsException(
          source,
          null,
          "truncated: the header length says "
              + headerLength
              + " bytes of JSON but only "
              + (size - Long.BYTES)
              + " bytes follow it");
    }
    return headerLength;
  }

  /** The parsed header: metadata and entries validated against {@code dataLength}. */
  private record Header(Map<String, String> metadata, List<Entry> entries) {}

  private static Header parseHeader(String source, byte[] header, long dataLength) {
    JsonNode root;
    try {
      root = JSON.readTree(header);
    } catch (JacksonException e) {
      throw new SafetensorsException(
          source, null, "malformed header JSON: " + e.getOriginalMessage(), e);
    } catch (IOException e) {
      throw new SafetensorsException(source, null, "unreadable header: " + e.getMessage(), e);
    }
    if (root == null || !root.isObject()) {
      throw new SafetensorsException(source, null, "the header is not a JSON object");
    }
    Map<String, String> metadata = new LinkedHashMap<>();
    List<Entry> entries = new ArrayList<>();
    for (Map.Entry<String, JsonNode> field : root.properties()) {
      if (field.getKey().equals(METADATA_KEY)) {
        readMetadata(source, field.getValue(), metadata);
      } else {
        entries.add(Entry.of(source, field.getKey(), field.getValue(), dataLength));
      }
    }
    rejectOverlaps(source, entries);
    return new Header(Collections.unmodifiableMap(metadata), entries);
  }

  private static void readMetadata(String source, JsonNode node, Map<String, String> into) {
    if (!node.isObject()) {
      throw new SafetensorsException(source, null, METADATA_KEY + " is not a JSON object");
    }
    for (Map.Entry<String, JsonNode> field : node.properties()) {
      if (!field.getValue().isTextual()) {
        throw new SafetensorsException(
            source,
            null,
            METADATA_KEY + "." + field.getKey() + " is not a string: " + field.getValue());
      }
      into.put(field.getKey(), field.getValue().textValue());
    }
  }

  private static void rejectOverlaps(String source, List<Entry> entries) {
    List<Entry> byBegin = new ArrayList<>();
    for (Entry e : entries) {
      if (e.end > e.begin) {
        byBegin.add(e);
      }
    }
    byBegin.sort(Comparator.comparingLong((Entry e) -> e.begin));
    for (int i = 1; i < byBegin.size(); i++) {
      Entry prev = byBegin.get(i - 1);
      Entry next = byBegin.get(i);
      if (next.begin < prev.end) {
        throw new SafetensorsException(
            source,
            next.name,
            "data_offsets ["
                + next.begin
                + ", "
                + next.end
                + "] overlap those of tensor '"
                + prev.name
                + "' ["
                + prev.begin
                + ", "
                + prev.end
                + "]");
      }
    }
  }

  /** One header entry, validated against the data size. */
  private record Entry(String name, DType dtype, Shape shape, long begin, long end) {

    static Entry of(String source, String name, JsonNode node, long dataLength) {
      if (!node.isObject()) {
        throw new SafetensorsException(source, name, "entry is not a JSON object: " + node);
      }
      JsonNode dtypeNode = node.get("dtype");
      if (dtypeNode == null || !dtypeNode.isTextual()) {
        throw new SafetensorsException(source, name, "missing or non-string \"dtype\"");
      }
      DType dtype;
      try {
        dtype = DType.parse(dtypeNode.textValue());
      } catch (IllegalArgumentException e) {
        throw new SafetensorsException(
            source, name, "unsupported dtype '" + dtypeNode.textValue() + "'", e);
      }
      Shape shape = new Shape(naturals(source, name, node.get("shape"), "shape", -1));
      long[] offsets = naturals(source, name, node.get("data_offsets"), "data_offsets", 2);
      long begin = offsets[0];
      long end = offsets[1];
      if (begin > end || end > dataLength) {
        throw new SafetensorsException(
            source,
            name,
            "data_offsets ["
                + begin
                + ", "
                + end
                + "] lie outside the "
                + dataLength
                + " data bytes of the file");
      }
      long needed;
      try {
        needed = shape.byteSize(dtype.elementSize());
      } catch (ArithmeticException e) {
        throw new SafetensorsException(
            source, name, "shape " + shape + " overflows a 64-bit byte count", e);
      }
      if (end - begin != needed) {
        throw new SafetensorsException(
            source,
            name,
            "data_offsets ["
                + begin
                + ", "
                + end
                + "] hold "
                + (end - begin)
                + " bytes but shape "
                + shape
                + " of "
                + dtype.safetensorsName()
                + " needs "
                + needed);
      }
      return new Entry(name, dtype, shape, begin, end);
    }

    /** A JSON array of non-negative integers ({@code length} of them unless negative). */
    private static long[] naturals(
        String source, String name, JsonNode node, String key, int length) {
      if (node == null || !node.isArray() || (length >= 0 && node.size() != length)) {
        throw new SafetensorsException(
            source,
            name,
            "\""
                + key
                + "\" must be an array of "
                + (length >= 0 ? length + " " : "")
                + "non-negative integers, got "
                + node);
      }
      long[] out = new long[node.size()];
      for (int i = 0; i < out.length; i++) {
        JsonNode n = node.get(i);
        if (!n.isIntegralNumber() || !n.canConvertToLong() || n.longValue() < 0) {
          throw new SafetensorsException(
              source,
              name,
              "\"" + key + "\" must be an array of " + "non-negative integers, got " + node);
        }
        out[i] = n.longValue();
      }
      return out;
    }
  }

  /** The file name (or the source given to {@link #parse}), as used in messages. */
  public String source() {
    return source;
  }

  /** The {@code __metadata__} strings in header order (empty when absent). */
  public Map<String, String> metadata() {
    return metadata;
  }

  /** Every tensor, in header order. */
  public List<SafetensorsTensor> tensors() {
    return tensors;
  }

  /**
   * The tensor called {@code name}.
   *
   * @throws SafetensorsException naming the file and the tensor when there is none
   */
  public SafetensorsTensor tensor(String name) {
    SafetensorsTensor t = byName.get(name);
    if (t == null) {
      throw new SafetensorsException(source, name, "no such tensor");
    }
    return t;
  }

  /** Byte position of the data section (8 + header length). */
  public long dataStart() {
    return dataStart;
  }

  /**
   * Frees the memory if this instance read the file; idempotent. Tensor data must not be used
   * afterwards.
   */
  @Override
  public void close() {
    if (closed.compareAndSet(false, true) && arena != null) {
      arena.close();
    }
  }
}
