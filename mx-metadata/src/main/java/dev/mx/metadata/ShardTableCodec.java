package dev.mx.metadata;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonStreamContext;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.StreamReadFeature;
import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.annotation.Stable;
import dev.mx.api.digest.TileDigests;
import dev.mx.api.metadata.PublishedShard;
import dev.mx.api.metadata.PublishedTensor;
import dev.mx.api.metadata.PublisherTopology;
import dev.mx.api.metadata.ReplicaShard;
import dev.mx.api.metadata.ShardTable;
import dev.mx.transport.kit.TransportBundle;
import java.io.ByteArrayOutputStream;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;

/**
 * Encodes and decodes shard tables ({@code mx.reshard.shard_table.v1}, ModelExpress; ARCHITECTURE
 * §7.1) as UTF-8 JSON.
 *
 * <p>Encoding writes exactly the keys of the shard table (ARCHITECTURE §7.1) in a fixed order:
 * {@code schema, agent_name, metadata_endpoint, agent_meta_b64, tensors[, publisher_step]}; per
 * tensor {@code name, dtype, elsize, full_shape, shards}; per shard {@code agent_name, device_id,
 * addr, shard_offset, shape[, digest][, tile_digests | column_tile_digests][, changed_step]}
 * ({@link #TILE_DIGESTS}: digests over a fixed tiling of the shard, for verifying partial reads;
 * {@link #COLUMN_TILE_DIGESTS}: the same over column tiles; {@link #CHANGED_STEP}: the step at
 * which the shard's bytes last changed, for delta refits), and last, {@link #REPLICA_SHARDS}: the
 * boxes held as replicas of another publisher's, in a compact form. A publisher serving several
 * transports (its agent metadata a {@link TransportBundle}) writes the primary transport's blob as
 * {@code agent_meta_b64} and, last, {@link #AGENT_META_EXTRA} = {@code {"primary": NAME, "others":
 * {NAME: BASE64, ...}}}; decoding puts the bundle back together. The optional keys are omitted when
 * absent, never written as null, so adding them leaves every other byte as it was. Dtypes are
 * written as {@code torch.<name>} labels and addresses as unsigned 64-bit integers.
 *
 * <p>Decoding streams the document through Jackson's parser and builds the records directly. It
 * rejects a wrong schema, a missing key, a value of the wrong type or out of range, a shard outside
 * its tensor and a document larger than the {@link Limits}, naming the JSON path of the field at
 * fault; it stops reading oversized input at the limit. Unknown keys are skipped (tables may grow
 * optional keys); {@code null} for an optional key reads as absent. Instances are immutable and
 * thread-safe.
 */
@Stable
public final class ShardTableCodec {

  /** Keys of the top-level object, in encoding order. */
  public static final List<String> TABLE_KEYS =
      List.of(
          "schema",
          "agent_name",
          "metadata_endpoint",
          "agent_meta_b64",
          "tensors",
          "publisher_step");

  /**
   * The optional key carrying the blobs of a publisher's further transports (see the class
   * comment).
   */
  public static final String AGENT_META_EXTRA = "agent_meta_extra";

  /**
   * Optional per-shard key: digests over a fixed tiling of the shard's bytes ({@code tile_bytes,
   * digests}).
   */
  public static final String TILE_DIGESTS = "tile_digests";

  /**
   * Optional per-shard key in place of {@link #TILE_DIGESTS}: digests over column tiles ({@code
   * tile_bytes, row_bytes, column_bytes, digests}; {@link TileDigests}). A key of its own, so a
   * reader that does not know column tiles skips them (and verifies the shard whole) instead of
   * taking them for byte tiles.
   */
  public static final String COLUMN_TILE_DIGESTS = "column_tile_digests";

  /**
   * Optional per-shard key, last: the step at which the publisher last changed the shard's bytes. A
   * receiver holding that step's bytes of the shard (same digest) need not read it again.
   */
  public static final String CHANGED_STEP = "changed_step";

  /**
   * Optional top-level key, last: the boxes the publisher holds as replicas of another publisher's
   * ({@link ReplicaShard}), one array per box, {@code [tensor, device_id, addr, shard_offset,
   * shape, digest or null]} and, when the publisher tracks changes, {@code changed_step} seventh.
   * The agent is the table's; the tensor's dtype, element size and global shape are its owner's.
   * About a third of a tensor entry's bytes and tokens, and ModelExpress' decoder, which does not
   * know the key, reads every box from its owner.
   */
  public static final String REPLICA_SHARDS = "replica_shards";

  /** Keys of a tensor entry, in encoding order. */
  public static final List<String> TENSOR_KEYS =
      List.of("name", "dtype", "elsize", "full_shape", "shards");

  /** Keys of a shard, in encoding order ({@code digest} optional). */
  public static final List<String> SHARD_KEYS =
      List.of("agent_name", "device_id", "addr", "shard_offset", "shape", "digest");

  private static final int MAX_NESTING = 64;
  private static final BigInteger TWO_TO_64 = BigInteger.ONE.shiftLeft(64);
  private static final ShardTableCodec STANDARD = new ShardTableCodec(Limits.DEFAULT);

  /**
   * What a decoder accepts at most.
   *
   * @param maxBytes document size in bytes
   * @param maxTensors tensor entries per table
   * @param maxShardsPerTensor shards per tensor entry
   * @param maxRank dimensions of a shape or offset
   */
  public record Limits(long maxBytes, int maxTensors, int maxShardsPerTensor, int maxRank) {
    /** 1 GiB, a million tensors, 65 536 shards per tensor, rank 32. */
    public static final Limits DEFAULT = new Limits(1L << 30, 1 << 20, 1 << 16, 32);

    public Limits {
      if (maxBytes <= 0 || maxTensors <= 0 || maxShardsPerTensor <= 0 || maxRank <= 0) {
        throw new IllegalArgumentException(
            "shard-table limits must be positive: "
                + maxBytes
                + " bytes, "
                + maxTensors
                + " tensors, "
                + maxShardsPerTensor
                + " shards per tensor, rank "
                + maxRank);
      }
    }

    public Limits withMaxBytes(long bytes) {
      return new Limits(bytes, maxTensors, maxShardsPerTensor, maxRank);
    }

    public Limits withMaxTensors(int tensors) {
      return new Limits(maxBytes, tensors, maxShardsPerTensor, maxRank);
    }

    public Limits withMaxShardsPerTensor(int shards) {
      return new Limits(maxBytes, maxTensors, shards, maxRank);
    }

    public Limits withMaxRank(int rank) {
      return new Limits(maxBytes, maxTensors, maxShardsPerTensor, rank);
    }
  }

  private final Limits limits;
  private final JsonFactory factory;

  public ShardTableCodec(Limits limits) {
    this.limits = limits;
    this.factory =
        JsonFactory.builder()
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .streamReadConstraints(
                StreamReadConstraints.builder()
                    // Agent metadata is one long base64 string; the byte limit bounds it already.
                    .maxStringLength((int) Math.min(Integer.MAX_VALUE, limits.maxBytes))
                    .maxNestingDepth(MAX_NESTING)
                    .build())
            .build();
  }

  /** A codec with {@link Limits#DEFAULT}. */
  public static ShardTableCodec standard() {
    return STANDARD;
  }

  public Limits limits() {
    return limits;
  }

  // ---------------------------------------------------------------- encoding

  /**
   * Encodes a table.
   *
   * @throws ShardTableFormatException when the table could not be decoded again (unknown dtype,
   *     element size not matching the dtype, a shard of another rank or outside its tensor, a
   *     malformed digest)
   */
  public byte[] encode(ShardTable table) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(256 + 160 * table.entryCount());
    encode(table, out);
    return out.toByteArray();
  }

  /** Encodes a table into {@code out} (not closed). */
  public void encode(ShardTable table, OutputStream out) {
    try (JsonGenerator g = factory.createGenerator(out)) {
      g.disable(JsonGenerator.Feature.AUTO_CLOSE_TARGET);
      g.writeStartObject();
      g.writeStringField("schema", ShardTable.SCHEMA);
      g.writeStringField("agent_name", table.agentName());
      g.writeStringField("metadata_endpoint", table.metadataEndpoint());
      byte[] agentMetadata = table.agentMetadata();
      List<TransportBundle.Entry> bundle =
          TransportBundle.isBundle(agentMetadata) ? TransportBundle.decode(agentMetadata) : null;
      g.writeStringField(
          "agent_meta_b64",
          Base64.getEncoder()
              .encodeToString(bundle == null ? agentMetadata : bundle.getFirst().metadata()));
      g.writeArrayFieldStart("tensors");
      List<PublishedTensor> tensors = table.tensors();
      for (int i = 0; i < tensors.size(); i++) {
        writeTensor(g, tensors.get(i), i);
      }
      g.writeEndArray();
      if (table.publisherStep() != null) {
        g.writeNumberField("publisher_step", checkStep(table.publisherStep(), "publisher_step"));
      }
      if (bundle != null) {
        writeExtraTransports(g, bundle);
      }
      if (table.topology() != null) {
        // Optional, after every ModelExpress key: decoders that do not know it skip it.
        g.writeObjectFieldStart("publisher_topology");
        g.writeNumberField("rank", table.topology().rank());
        g.writeNumberField("world_size", table.topology().worldSize());
        g.writeStringField("layout", table.topology().layout());
        g.writeEndObject();
      }
      if (!table.replicas().isEmpty()) {
        writeReplicas(g, table);
      }
      g.writeEndObject();
    } catch (IOException e) {
      throw new UncheckedIOException(
          "could not write shard table of agent '" + table.agentName() + "'", e);
    }
  }

  private static void writeExtraTransports(JsonGenerator g, List<TransportBundle.Entry> bundle)
      throws IOException {
    g.writeObjectFieldStart(AGENT_META_EXTRA);
    g.writeStringField("primary", bundle.getFirst().transport());
    g.writeObjectFieldStart("others");
    for (TransportBundle.Entry e : bundle.subList(1, bundle.size())) {
      g.writeStringField(e.transport(), Base64.getEncoder().encodeToString(e.metadata()));
    }
    g.writeEndObject();
    g.writeEndObject();
  }

  /** Reads {@link #AGENT_META_EXTRA}: the primary's name, then the others' blobs, in order. */
  private static List<TransportBundle.Entry> readExtraTransports(JsonParser p, JsonPathCursor at)
      throws IOException {
    if (p.currentToken() != JsonToken.START_OBJECT) {
      throw wrongType(at, "an object", p.currentToken());
    }
    List<TransportBundle.Entry> out = new ArrayList<>();
    String primary = null;
    while (p.nextToken() == JsonToken.FIELD_NAME) {
      String key = p.currentName();
      p.nextToken();
      at.field(key);
      switch (key) {
        case "primary" -> primary = readString(p, at);
        case "others" -> {
          if (p.currentToken() != JsonToken.START_OBJECT) {
            throw wrongType(at, "an object", p.currentToken());
          }
          while (p.nextToken() == JsonToken.FIELD_NAME) {
            String name = p.currentName();
            p.nextToken();
            at.field(name);
            out.add(new TransportBundle.Entry(name, readBase64(p, at)));
            at.pop();
          }
        }
        default -> p.skipChildren();
      }
      at.pop();
    }
    requirePresent(primary, AGENT_META_EXTRA + ".primary");
    out.addFirst(new TransportBundle.Entry(primary, new byte[0]));
    return out;
  }

  /**
   * The agent metadata: the bundle {@code extra} describes around {@code primaryBlob}, or the blob
   * alone.
   */
  private static byte[] agentMetadata(byte[] primaryBlob, List<TransportBundle.Entry> extra) {
    if (extra == null || primaryBlob == null) {
      return primaryBlob;
    }
    List<TransportBundle.Entry> entries = new ArrayList<>(extra);
    entries.set(0, new TransportBundle.Entry(extra.getFirst().transport(), primaryBlob));
    return TransportBundle.encode(entries);
  }

  private static void writeTensor(JsonGenerator g, PublishedTensor t, int index)
      throws IOException {
    JsonPathCursor at = new JsonPathCursor().field("tensors").index(index);
    DType dtype = checkTensor(t, at);
    g.writeStartObject();
    g.writeStringField("name", t.name());
    g.writeStringField("dtype", dtype.torchLabel());
    g.writeNumberField("elsize", t.elsize());
    g.writeFieldName("full_shape");
    writeLongs(g, t.fullShape().dims());
    g.writeArrayFieldStart("shards");
    for (PublishedShard s : t.shards()) {
      g.writeStartObject();
      g.writeStringField("agent_name", s.agentName());
      g.writeNumberField("device_id", s.deviceId());
      g.writeFieldName("addr");
      writeAddress(g, s.addr());
      g.writeFieldName("shard_offset");
      writeLongs(g, s.shardOffset());
      g.writeFieldName("shape");
      writeLongs(g, s.shape().dims());
      if (s.digest() != null) {
        g.writeStringField("digest", s.digest());
      }
      if (s.tiles() != null) {
        // Optional and last, so tables without it keep their bytes and ModelExpress' decoder skips
        // it.
        g.writeObjectFieldStart(tilesKey(s.tiles()));
        g.writeNumberField("tile_bytes", s.tiles().tileBytes());
        if (s.tiles().byColumns()) {
          g.writeNumberField("row_bytes", s.tiles().rowBytes());
          g.writeNumberField("column_bytes", s.tiles().columnBytes());
        }
        g.writeArrayFieldStart("digests");
        for (String d : s.tiles().digests()) {
          g.writeString(d);
        }
        g.writeEndArray();
        g.writeEndObject();
      }
      if (s.changedStep() != null) {
        // Optional and after tile_digests: tables of publishers that do not track changes keep
        // their bytes.
        g.writeNumberField(
            CHANGED_STEP,
            checkStep(s.changedStep(), at.toString() + ".shards[" + s.agentName() + "]"));
      }
      g.writeEndObject();
    }
    g.writeEndArray();
    g.writeEndObject();
  }

  private static void writeReplicas(JsonGenerator g, ShardTable table) throws IOException {
    g.writeArrayFieldStart(REPLICA_SHARDS);
    List<ReplicaShard> replicas = table.replicas();
    for (int i = 0; i < replicas.size(); i++) {
      ReplicaShard r = replicas.get(i);
      PublishedShard s = r.shard();
      checkReplica(r, table.agentName(), new JsonPathCursor().field(REPLICA_SHARDS).index(i));
      g.writeStartArray();
      g.writeString(r.tensor());
      g.writeNumber(s.deviceId());
      writeAddress(g, s.addr());
      writeLongs(g, s.shardOffset());
      writeLongs(g, s.shape().dims());
      if (s.digest() == null) {
        g.writeNull();
      } else {
        g.writeString(s.digest());
      }
      if (s.changedStep() != null) {
        g.writeNumber(checkStep(s.changedStep(), REPLICA_SHARDS + "[" + i + "][6]"));
      }
      g.writeEndArray();
    }
    g.writeEndArray();
  }

  /** An address as the unsigned 64-bit integer it is. */
  private static void writeAddress(JsonGenerator g, long addr) throws IOException {
    if (addr >= 0) {
      g.writeNumber(addr);
    } else {
      g.writeNumber(Long.toUnsignedString(addr));
    }
  }

  private static void writeLongs(JsonGenerator g, long[] values) throws IOException {
    g.writeStartArray();
    for (long v : values) {
      g.writeNumber(v);
    }
    g.writeEndArray();
  }

  // ------------------------------------------------------ semantic checks (both directions)

  /**
   * Checks what the JSON types cannot: the dtype is known and matches {@code elsize}, every shard
   * has the tensor's rank, lies inside it, and carries a well-formed digest or none.
   */
  private static DType checkTensor(PublishedTensor t, JsonPathCursor at) {
    DType dtype;
    try {
      dtype = DType.parse(t.dtype());
    } catch (IllegalArgumentException e) {
      throw new ShardTableFormatException(
          at.field("dtype").toString(), "tensor '" + t.name() + "': " + e.getMessage());
    }
    if (t.elsize() != dtype.elementSize()) {
      throw new ShardTableFormatException(
          at.field("elsize").toString(),
          "tensor '"
              + t.name()
              + "': elsize "
              + t.elsize()
              + " does not match dtype "
              + t.dtype()
              + " ("
              + dtype.elementSize()
              + " bytes)");
    }
    long[] full = t.fullShape().dims();
    List<PublishedShard> shards = t.shards();
    for (int j = 0; j < shards.size(); j++) {
      PublishedShard s = shards.get(j);
      long[] offset = s.shardOffset();
      long[] shape = s.shape().dims();
      at.field("shards").index(j);
      if (offset.length != full.length) {
        throw new ShardTableFormatException(
            at.field("shard_offset").toString(),
            "tensor '"
                + t.name()
                + "': rank "
                + offset.length
                + " does not match full_shape "
                + Arrays.toString(full));
      }
      if (shape.length != full.length) {
        throw new ShardTableFormatException(
            at.field("shape").toString(),
            "tensor '"
                + t.name()
                + "': rank "
                + shape.length
                + " does not match full_shape "
                + Arrays.toString(full));
      }
      for (int d = 0; d < full.length; d++) {
        if (offset[d] < 0 || offset[d] > full[d] || shape[d] > full[d] - offset[d]) {
          throw new ShardTableFormatException(
              at.field("shard_offset").toString(),
              "tensor '"
                  + t.name()
                  + "': box at "
                  + Arrays.toString(offset)
                  + " of shape "
                  + Arrays.toString(shape)
                  + " leaves full_shape "
                  + Arrays.toString(full)
                  + " in dim "
                  + d);
        }
      }
      if (s.deviceId() < 0) {
        throw new ShardTableFormatException(
            at.field("device_id").toString(), "negative device id " + s.deviceId());
      }
      if (s.digest() != null && !isDigest(s.digest())) {
        throw new ShardTableFormatException(
            at.field("digest").toString(),
            "tensor '"
                + t.name()
                + "': digest '"
                + s.digest()
                + "' is not 32 lowercase hex characters");
      }
      if (s.tiles() != null) {
        checkTiles(t, s, at.field(tilesKey(s.tiles())));
        at.pop();
      }
      at.pop();
      at.pop();
    }
    return dtype;
  }

  /**
   * Checks a replica the way {@link #checkTensor} checks a shard, as far as it can without its
   * tensor (its owner's entry has the global shape): held by the table's own agent, offset and
   * shape of one rank, a well-formed digest or none, and no tile digests (a replica is verified
   * with its owner's).
   */
  private static void checkReplica(ReplicaShard r, String agent, JsonPathCursor at) {
    PublishedShard s = r.shard();
    String what = "replica of tensor '" + r.tensor() + "'";
    if (r.tensor().isEmpty()) {
      throw new ShardTableFormatException(at.index(0).toString(), "empty tensor name");
    }
    if (!s.agentName().equals(agent)) {
      throw new ShardTableFormatException(
          at.toString(),
          what
              + ": held by agent '"
              + s.agentName()
              + "', but a table lists only its own agent's ('"
              + agent
              + "') replicas");
    }
    if (s.deviceId() < 0) {
      throw new ShardTableFormatException(
          at.index(1).toString(), what + ": negative device id " + s.deviceId());
    }
    if (s.shardOffset().length != s.shape().rank()) {
      throw new ShardTableFormatException(
          at.index(3).toString(),
          what
              + ": offset "
              + Arrays.toString(s.shardOffset())
              + " and shape "
              + s.shape()
              + " differ in rank");
    }
    if (s.digest() != null && !isDigest(s.digest())) {
      throw new ShardTableFormatException(
          at.index(5).toString(),
          what + ": digest '" + s.digest() + "' is not 32 lowercase hex characters");
    }
    if (s.tiles() != null) {
      throw new ShardTableFormatException(
          at.toString(),
          what + ": a replica carries no tile digests (it is verified with its owner's)");
    }
  }

  /** The key a shard's tile digests go under: byte tiles' or column tiles'. */
  private static String tilesKey(TileDigests tiles) {
    return tiles.byColumns() ? COLUMN_TILE_DIGESTS : TILE_DIGESTS;
  }

  private static void checkTiles(PublishedTensor t, PublishedShard s, JsonPathCursor at) {
    long bytes = s.shape().byteSize(t.elsize());
    int expected = s.tiles().countFor(bytes);
    if (expected < 0) {
      throw new ShardTableFormatException(
          at.field("row_bytes").toString(),
          "tensor '"
              + t.name()
              + "': the shard's "
              + bytes
              + " bytes are not whole rows of "
              + s.tiles().rowBytes()
              + " bytes");
    }
    if (s.tiles().digests().size() != expected) {
      throw new ShardTableFormatException(
          at.field("digests").toString(),
          "tensor '"
              + t.name()
              + "': "
              + s.tiles().digests().size()
              + " tile digests, but "
              + bytes
              + " bytes in "
              + (s.tiles().byColumns()
                  ? "column tiles (rows of "
                      + s.tiles().rowBytes()
                      + " bytes, column blocks of "
                      + s.tiles().columnBytes()
                      + ", tiles of "
                      + s.tiles().tileBytes()
                      + ")"
                  : "tiles of " + s.tiles().tileBytes())
              + " make "
              + expected);
    }
    for (int k = 0; k < expected; k++) {
      if (!isDigest(s.tiles().digest(k))) {
        throw new ShardTableFormatException(
            at.field("digests").index(k).toString(),
            "tensor '"
                + t.name()
                + "': tile digest '"
                + s.tiles().digest(k)
                + "' is not 32 lowercase hex characters");
      }
    }
  }

  /**
   * The optional {@code tile_digests} object ({@code tile_bytes}, {@code digests}), or with {@code
   * columns} the {@code column_tile_digests} object, which adds {@code row_bytes} and {@code
   * column_bytes}.
   */
  private TileDigests readTiles(JsonParser p, JsonPathCursor at, boolean columns)
      throws IOException {
    if (p.currentToken() != JsonToken.START_OBJECT) {
      throw wrongType(at, "an object", p.currentToken());
    }
    Long tileBytes = null;
    Long rowBytes = null;
    Long columnBytes = null;
    List<String> list = null;
    while (p.nextToken() == JsonToken.FIELD_NAME) {
      String key = p.currentName();
      p.nextToken();
      at.field(key);
      switch (key) {
        case "tile_bytes" -> tileBytes = readLong(p, at);
        case "row_bytes" -> rowBytes = readLong(p, at);
        case "column_bytes" -> columnBytes = readLong(p, at);
        case "digests" ->
            list =
                readArray(
                    p, at, Integer.MAX_VALUE - 8, "tile digests", ShardTableCodec::readString);
        default -> p.skipChildren();
      }
      at.pop();
    }
    requirePresent(tileBytes, at, "tile_bytes");
    requirePresent(list, at, "digests");
    if (tileBytes <= 0) {
      throw new ShardTableFormatException(
          at.field("tile_bytes").toString(), "tile_bytes " + tileBytes + " must be positive");
    }
    if (!columns) {
      return new TileDigests(tileBytes, list);
    }
    requirePresent(rowBytes, at, "row_bytes");
    requirePresent(columnBytes, at, "column_bytes");
    if (columnBytes <= 0 || rowBytes <= 0 || rowBytes % columnBytes != 0) {
      throw new ShardTableFormatException(
          at.field("column_bytes").toString(),
          "column_bytes " + columnBytes + " must be positive and divide row_bytes " + rowBytes);
    }
    return new TileDigests(tileBytes, rowBytes, columnBytes, list);
  }

  private static boolean isDigest(String s) {
    if (s.length() != 32) {
      return false;
    }
    for (int i = 0; i < 32; i++) {
      char c = s.charAt(i);
      if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
        return false;
      }
    }
    return true;
  }

  private static long checkStep(long step, String path) {
    if (step < 0) {
      throw new ShardTableFormatException(path, "negative step " + step);
    }
    return step;
  }

  // ---------------------------------------------------------------- decoding

  /** Decodes a whole table. */
  public ShardTable decode(byte[] json) {
    checkSize(json.length);
    try (JsonParser p = factory.createParser(json)) {
      return (ShardTable) readTable(p, true);
    } catch (IOException e) {
      throw new UncheckedIOException(e); // byte-array parsers do not perform I/O
    }
  }

  /**
   * Decodes a whole table from a stream (not closed), reading at most {@link Limits#maxBytes()}
   * bytes.
   */
  public ShardTable decode(InputStream in) {
    try (JsonParser p = factory.createParser(new LimitedInputStream(in, limits.maxBytes))) {
      return (ShardTable) readTable(p, true);
    } catch (IOException e) {
      throw new UncheckedIOException("could not read shard table", e);
    }
  }

  /** Decodes everything but the shard objects, counting the tensor entries. */
  public ShardTableHeader decodeHeader(byte[] json) {
    checkSize(json.length);
    try (JsonParser p = factory.createParser(json)) {
      return (ShardTableHeader) readTable(p, false);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private void checkSize(long length) {
    if (length > limits.maxBytes) {
      throw new ShardTableFormatException(
          "$", length + " bytes exceed the limit of " + limits.maxBytes + " bytes");
    }
  }

  private Object readTable(JsonParser p, boolean withTensors) throws IOException {
    JsonPathCursor at = new JsonPathCursor();
    try {
      return readTable(p, at, withTensors);
    } catch (JsonProcessingException e) {
      throw new ShardTableFormatException(
          pathOf(p.getParsingContext()),
          "not valid JSON: "
              + e.getOriginalMessage()
              + " (line "
              + e.getLocation().getLineNr()
              + ", column "
              + e.getLocation().getColumnNr()
              + ")",
          e);
    }
  }

  /** The parser's own position, for syntax errors it detects before this codec sees the token. */
  private static String pathOf(JsonStreamContext context) {
    List<JsonStreamContext> chain = new ArrayList<>();
    for (JsonStreamContext c = context; c != null && !c.inRoot(); c = c.getParent()) {
      chain.add(c);
    }
    JsonPathCursor at = new JsonPathCursor();
    for (JsonStreamContext c : chain.reversed()) {
      if (c.inArray()) {
        at.index(Math.max(0, c.getCurrentIndex()));
      } else if (c.getCurrentName() != null) {
        at.field(c.getCurrentName());
      }
    }
    return at.toString();
  }

  private Object readTable(JsonParser p, JsonPathCursor at, boolean withTensors)
      throws IOException {
    if (p.nextToken() != JsonToken.START_OBJECT) {
      throw wrongType(at, "an object", p.currentToken());
    }
    String schema = null;
    String agentName = null;
    String endpoint = "";
    byte[] agentMetadata = null;
    List<PublishedTensor> tensors = null;
    int entryCount = -1;
    Long step = null;
    PublisherTopology topology = null;
    List<TransportBundle.Entry> extra = null;
    List<ParsedReplica> replicas = List.of();
    int replicaCount = 0;
    while (p.nextToken() == JsonToken.FIELD_NAME) {
      String key = p.currentName();
      JsonToken value = p.nextToken();
      at.field(key);
      switch (key) {
        case "schema" -> {
          schema = readString(p, at);
          if (!schema.equals(ShardTable.SCHEMA)) {
            throw new ShardTableFormatException(
                at.toString(), "expected '" + ShardTable.SCHEMA + "', got '" + schema + "'");
          }
        }
        case "agent_name" -> agentName = readString(p, at);
        case "metadata_endpoint" ->
            endpoint = value == JsonToken.VALUE_NULL ? "" : readString(p, at);
        case "agent_meta_b64" -> agentMetadata = readBase64(p, at);
        case "tensors" -> {
          if (withTensors) {
            tensors = readTensors(p, at);
            entryCount = tensors.size();
          } else {
            entryCount = countTensors(p, at);
          }
        }
        case "publisher_step" ->
            step =
                value == JsonToken.VALUE_NULL ? null : checkStep(readLong(p, at), "publisher_step");
        case "publisher_topology" ->
            topology = value == JsonToken.VALUE_NULL ? null : readTopology(p, at);
        case AGENT_META_EXTRA ->
            extra = value == JsonToken.VALUE_NULL ? null : readExtraTransports(p, at);
        case REPLICA_SHARDS -> {
          if (value == JsonToken.VALUE_NULL) {
            break;
          }
          if (withTensors) {
            replicas = readArray(p, at, limits.maxTensors, "replicas", this::readReplica);
            replicaCount = replicas.size();
          } else {
            replicaCount = countEntries(p, at, "replicas", JsonToken.START_ARRAY, "an array");
          }
        }
        default -> p.skipChildren();
      }
      at.pop();
    }
    if (p.nextToken() != null) {
      throw new ShardTableFormatException(
          "$", "unexpected content after the table object: " + describe(p.currentToken()));
    }
    requirePresent(schema, "schema");
    requirePresent(agentName, "agent_name");
    requirePresent(agentMetadata, "agent_meta_b64");
    requirePresent(entryCount < 0 ? null : entryCount, "tensors");
    agentMetadata = agentMetadata(agentMetadata, extra);
    if (withTensors) {
      // The replicas are the table's agent's, whichever key came first: built once it is known.
      List<ReplicaShard> held = new ArrayList<>(replicas.size());
      for (int i = 0; i < replicas.size(); i++) {
        ReplicaShard r = replicas.get(i).heldBy(agentName);
        checkReplica(r, agentName, new JsonPathCursor().field(REPLICA_SHARDS).index(i));
        held.add(r);
      }
      return new ShardTable(agentName, endpoint, agentMetadata, tensors, step, topology, held);
    }
    return new ShardTableHeader(
        agentName, endpoint, agentMetadata, step, entryCount + replicaCount);
  }

  /** Reads one array element with the cursor on it. */
  @FunctionalInterface
  private interface ElementReader<T> {
    T read(JsonParser p, JsonPathCursor at) throws IOException;
  }

  /** Reads an array of at most {@code limit} elements, naming each element's index in errors. */
  private static <T> List<T> readArray(
      JsonParser p, JsonPathCursor at, int limit, String what, ElementReader<T> element)
      throws IOException {
    expectArray(p, at);
    List<T> items = new ArrayList<>();
    while (p.nextToken() != JsonToken.END_ARRAY) {
      if (items.size() == limit) {
        throw new ShardTableFormatException(
            at.toString(), "more than " + limit + " " + what + " (limit)");
      }
      at.index(items.size());
      items.add(element.read(p, at));
      at.pop();
    }
    return items;
  }

  /**
   * The optional {@code publisher_topology} object: {@code rank}, {@code world_size}, {@code
   * layout}.
   */
  private PublisherTopology readTopology(JsonParser p, JsonPathCursor at) throws IOException {
    if (p.currentToken() != JsonToken.START_OBJECT) {
      throw wrongType(at, "an object", p.currentToken());
    }
    Integer rank = null;
    Integer world = null;
    String layout = null;
    while (p.nextToken() == JsonToken.FIELD_NAME) {
      String key = p.currentName();
      p.nextToken();
      at.field(key);
      switch (key) {
        case "rank" -> rank = readInt(p, at, 0);
        case "world_size" -> world = readInt(p, at, 1);
        case "layout" -> layout = readString(p, at);
        default -> p.skipChildren();
      }
      at.pop();
    }
    requirePresent(rank, at, "rank");
    requirePresent(world, at, "world_size");
    requirePresent(layout, at, "layout");
    if (rank >= world) {
      throw new ShardTableFormatException(
          at.field("rank").toString(), "rank " + rank + " is not below world_size " + world);
    }
    return new PublisherTopology(rank, world, layout);
  }

  private List<PublishedTensor> readTensors(JsonParser p, JsonPathCursor at) throws IOException {
    return readArray(
        p,
        at,
        limits.maxTensors,
        "tensor entries",
        (parser, here) -> {
          PublishedTensor t = readTensor(parser, here);
          checkTensor(t, here);
          return t;
        });
  }

  /** Counts the tensor entries, checking only that each is an object. */
  private int countTensors(JsonParser p, JsonPathCursor at) throws IOException {
    return countEntries(p, at, "tensor entries", JsonToken.START_OBJECT, "an object");
  }

  /** Counts an array's elements, checking only that each starts with {@code start}. */
  private int countEntries(
      JsonParser p, JsonPathCursor at, String what, JsonToken start, String expected)
      throws IOException {
    return readArray(
            p,
            at,
            limits.maxTensors,
            what,
            (parser, here) -> {
              if (parser.currentToken() != start) {
                throw wrongType(here, expected, parser.currentToken());
              }
              parser.skipChildren();
              return Boolean.TRUE;
            })
        .size();
  }

  /**
   * One {@link #REPLICA_SHARDS} element: {@code [tensor, device_id, addr, shard_offset, shape,
   * digest or null(, changed_step)]}, as read: its agent is the table's, which may come later.
   */
  private ParsedReplica readReplica(JsonParser p, JsonPathCursor at) throws IOException {
    expectArray(p, at);
    String tensor = null;
    int deviceId = 0;
    long addr = 0;
    long[] offset = null;
    long[] shape = null;
    String digest = null;
    Long changedStep = null;
    int n = 0;
    while (p.nextToken() != JsonToken.END_ARRAY) {
      at.index(n);
      switch (n) {
        case 0 -> tensor = readString(p, at);
        case 1 -> deviceId = readInt(p, at, 0);
        case 2 -> addr = readAddress(p, at);
        case 3 -> offset = readLongs(p, at);
        case 4 -> shape = readLongs(p, at);
        case 5 -> digest = p.currentToken() == JsonToken.VALUE_NULL ? null : readString(p, at);
        case 6 -> changedStep = checkStep(readLong(p, at), at.toString());
        default ->
            throw new ShardTableFormatException(
                at.toString(), "a replica has at most 7 elements (tensor .. changed_step)");
      }
      at.pop();
      n++;
    }
    if (n < 6) {
      throw new ShardTableFormatException(
          at.toString(),
          "a replica needs [tensor, device_id, addr, shard_offset, shape, digest], got "
              + n
              + " elements");
    }
    return new ParsedReplica(tensor, deviceId, addr, offset, new Shape(shape), digest, changedStep);
  }

  /** A {@link #REPLICA_SHARDS} element before the table's agent is known. */
  private record ParsedReplica(
      String tensor,
      int deviceId,
      long addr,
      long[] offset,
      Shape shape,
      String digest,
      Long changedStep) {
    ReplicaShard heldBy(String agent) {
      return new ReplicaShard(
          tensor,
          new PublishedShard(agent, deviceId, addr, offset, shape, digest, null, changedStep));
    }
  }

  private PublishedTensor readTensor(JsonParser p, JsonPathCursor at) throws IOException {
    if (p.currentToken() != JsonToken.START_OBJECT) {
      throw wrongType(at, "an object", p.currentToken());
    }
    String name = null;
    String dtype = null;
    int elsize = -1;
    long[] fullShape = null;
    List<PublishedShard> shards = null;
    while (p.nextToken() == JsonToken.FIELD_NAME) {
      String key = p.currentName();
      p.nextToken();
      at.field(key);
      switch (key) {
        case "name" -> name = readString(p, at);
        case "dtype" -> dtype = readString(p, at);
        case "elsize" -> elsize = readInt(p, at, 1);
        case "full_shape" -> fullShape = readLongs(p, at);
        case "shards" -> shards = readShards(p, at);
        default -> p.skipChildren();
      }
      at.pop();
    }
    requirePresent(name, at, "name");
    requirePresent(dtype, at, "dtype");
    requirePresent(elsize < 0 ? null : elsize, at, "elsize");
    requirePresent(fullShape, at, "full_shape");
    requirePresent(shards, at, "shards");
    return new PublishedTensor(name, dtype, elsize, new Shape(fullShape), shards);
  }

  private List<PublishedShard> readShards(JsonParser p, JsonPathCursor at) throws IOException {
    return readArray(p, at, limits.maxShardsPerTensor, "shards", this::readShard);
  }

  private PublishedShard readShard(JsonParser p, JsonPathCursor at) throws IOException {
    if (p.currentToken() != JsonToken.START_OBJECT) {
      throw wrongType(at, "an object", p.currentToken());
    }
    String agentName = null;
    int deviceId = -1;
    Long addr = null;
    long[] offset = null;
    long[] shape = null;
    String digest = null;
    TileDigests tiles = null;
    Long changedStep = null;
    while (p.nextToken() == JsonToken.FIELD_NAME) {
      String key = p.currentName();
      JsonToken value = p.nextToken();
      at.field(key);
      switch (key) {
        case "agent_name" -> agentName = readString(p, at);
        case "device_id" -> deviceId = readInt(p, at, 0);
        case "addr" -> addr = readAddress(p, at);
        case "shard_offset" -> offset = readLongs(p, at);
        case "shape" -> shape = readLongs(p, at);
        case "digest" -> digest = value == JsonToken.VALUE_NULL ? null : readString(p, at);
        case TILE_DIGESTS -> tiles = value == JsonToken.VALUE_NULL ? null : readTiles(p, at, false);
        case COLUMN_TILE_DIGESTS ->
            tiles = value == JsonToken.VALUE_NULL ? null : readTiles(p, at, true);
        case CHANGED_STEP ->
            changedStep =
                value == JsonToken.VALUE_NULL ? null : checkStep(readLong(p, at), at.toString());
        default -> p.skipChildren();
      }
      at.pop();
    }
    requirePresent(agentName, at, "agent_name");
    requirePresent(deviceId < 0 ? null : deviceId, at, "device_id");
    requirePresent(addr, at, "addr");
    requirePresent(offset, at, "shard_offset");
    requirePresent(shape, at, "shape");
    return new PublishedShard(
        agentName, deviceId, addr, offset, new Shape(shape), digest, tiles, changedStep);
  }

  // ---------------------------------------------------------------- typed readers

  private static String readString(JsonParser p, JsonPathCursor at) throws IOException {
    if (p.currentToken() != JsonToken.VALUE_STRING) {
      throw wrongType(at, "a string", p.currentToken());
    }
    return p.getText();
  }

  private static byte[] readBase64(JsonParser p, JsonPathCursor at) throws IOException {
    String s = readString(p, at);
    try {
      return Base64.getDecoder().decode(s);
    } catch (IllegalArgumentException e) {
      throw new ShardTableFormatException(at.toString(), "not base64: " + e.getMessage());
    }
  }

  private static long readLong(JsonParser p, JsonPathCursor at) throws IOException {
    if (p.currentToken() != JsonToken.VALUE_NUMBER_INT) {
      throw wrongType(at, "an integer", p.currentToken());
    }
    if (p.getNumberType() == JsonParser.NumberType.BIG_INTEGER) {
      throw new ShardTableFormatException(at.toString(), p.getText() + " does not fit in 64 bits");
    }
    return p.getLongValue();
  }

  private static int readInt(JsonParser p, JsonPathCursor at, int min) throws IOException {
    long v = readLong(p, at);
    if (v < min || v > Integer.MAX_VALUE) {
      throw new ShardTableFormatException(
          at.toString(), v + " is out of range [" + min + ", " + Integer.MAX_VALUE + "]");
    }
    return (int) v;
  }

  /** An address: an unsigned 64-bit integer, kept as the same bits in a {@code long}. */
  private static long readAddress(JsonParser p, JsonPathCursor at) throws IOException {
    if (p.currentToken() != JsonToken.VALUE_NUMBER_INT) {
      throw wrongType(at, "an integer", p.currentToken());
    }
    if (p.getNumberType() == JsonParser.NumberType.BIG_INTEGER) {
      BigInteger v = p.getBigIntegerValue();
      if (v.signum() < 0 || v.compareTo(TWO_TO_64) >= 0) {
        throw new ShardTableFormatException(
            at.toString(), v + " is not an unsigned 64-bit address");
      }
      return v.longValue();
    }
    long v = p.getLongValue();
    if (v < 0) {
      throw new ShardTableFormatException(at.toString(), "negative address " + v);
    }
    return v;
  }

  private long[] readLongs(JsonParser p, JsonPathCursor at) throws IOException {
    expectArray(p, at);
    long[] values = new long[4];
    int n = 0;
    while (p.nextToken() != JsonToken.END_ARRAY) {
      if (n == limits.maxRank) {
        throw new ShardTableFormatException(
            at.toString(), "more than " + limits.maxRank + " dimensions (limit)");
      }
      at.index(n);
      long v = readLong(p, at);
      if (v < 0) {
        throw new ShardTableFormatException(at.toString(), "negative extent " + v);
      }
      at.pop();
      if (n == values.length) {
        values = Arrays.copyOf(values, n * 2);
      }
      values[n++] = v;
    }
    return Arrays.copyOf(values, n);
  }

  private static void expectArray(JsonParser p, JsonPathCursor at) {
    if (p.currentToken() != JsonToken.START_ARRAY) {
      throw wrongType(at, "an array", p.currentToken());
    }
  }

  private static void requirePresent(Object value, String key) {
    if (value == null) {
      throw new ShardTableFormatException(key, "missing required key");
    }
  }

  private static void requirePresent(Object value, JsonPathCursor at, String key) {
    if (value == null) {
      String path = at.field(key).toString();
      at.pop();
      throw new ShardTableFormatException(path, "missing required key");
    }
  }

  private static ShardTableFormatException wrongType(
      JsonPathCursor at, String expected, JsonToken got) {
    return new ShardTableFormatException(
        at.toString(), "expected " + expected + ", got " + describe(got));
  }

  private static String describe(JsonToken t) {
    if (t == null) {
      return "the end of the input";
    }
    return switch (t) {
      case VALUE_STRING -> "a string";
      case VALUE_NUMBER_INT -> "an integer";
      case VALUE_NUMBER_FLOAT -> "a number with a fraction";
      case VALUE_TRUE, VALUE_FALSE -> "a boolean";
      case VALUE_NULL -> "null";
      case START_OBJECT -> "an object";
      case START_ARRAY -> "an array";
      default -> t.asString() == null ? t.name() : "'" + t.asString() + "'";
    };
  }

  /** Stops a stream at the byte limit with a format error instead of reading on. */
  private static final class LimitedInputStream extends FilterInputStream {
    private final long limit;
    private long read;

    LimitedInputStream(InputStream in, long limit) {
      super(in);
      this.limit = limit;
    }

    @Override
    public int read() throws IOException {
      int b = super.read();
      if (b >= 0) {
        count(1);
      }
      return b;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      // Ask for at most one byte beyond the limit: enough to tell "exactly at" from "over".
      int n = super.read(b, off, (int) Math.min(len, limit - read + 1));
      if (n > 0) {
        count(n);
      }
      return n;
    }

    private void count(int n) {
      read += n;
      if (read > limit) {
        throw new ShardTableFormatException("$", "input exceeds the limit of " + limit + " bytes");
      }
    }

    @Override
    public void close() {
      // The caller owns the stream.
    }
  }
}
