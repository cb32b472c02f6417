package dev.mx.transport.kit;

import dev.mx.api.error.TransportException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The peer metadata of a publisher that serves several transports at once (a {@link
 * RoutingTransport}): one blob per transport, the primary first. It travels as one opaque {@code
 * byte[]} wherever a single transport's blob does; the shard-table codec writes the primary's blob
 * as {@code agent_meta_b64} (so ModelExpress's decoder and single-transport receivers still read
 * it) and the others in an optional key.
 *
 * <p>Encoding: {@code "MXTB"}, a count, then per entry a UTF-8 name (u16 length) and a blob (u32
 * length), little-endian. No backend's own blob starts with these four bytes.
 */
public final class TransportBundle {
  private static final int MAGIC = 0x4254584d; // "MXTB" read little-endian

  private TransportBundle() {}

  /** One transport's blob. */
  public record Entry(String transport, byte[] metadata) {
    public Entry {
      Objects.requireNonNull(transport, "transport");
      metadata = metadata.clone();
    }

    @Override
    public byte[] metadata() {
      return metadata.clone();
    }
  }

  /** Whether {@code metadata} is a bundle rather than one transport's blob. */
  public static boolean isBundle(byte[] metadata) {
    return metadata != null
        && metadata.length >= 8
        && ByteBuffer.wrap(metadata).order(ByteOrder.LITTLE_ENDIAN).getInt(0) == MAGIC;
  }

  /** Encodes entries, the primary first. */
  public static byte[] encode(List<Entry> entries) {
    if (entries.isEmpty()) {
      throw new IllegalArgumentException("a transport bundle needs at least one entry");
    }
    int size = 8;
    List<byte[]> names = new ArrayList<>(entries.size());
    for (Entry e : entries) {
      byte[] n = e.transport().getBytes(StandardCharsets.UTF_8);
      names.add(n);
      size += 2 + n.length + 4 + e.metadata.length;
    }
    ByteBuffer b = ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
    b.putInt(MAGIC).putInt(entries.size());
    for (int i = 0; i < entries.size(); i++) {
      b.putShort((short) names.get(i).length).put(names.get(i));
      b.putInt(entries.get(i).metadata.length).put(entries.get(i).metadata);
    }
    return b.array();
  }

  /**
   * Decodes a bundle, primary first.
   *
   * @throws IllegalArgumentException when {@code metadata} is not a well-formed bundle
   */
  public static List<Entry> decode(byte[] metadata) {
    if (!isBundle(metadata)) {
      throw new IllegalArgumentException(
          "not a transport bundle (" + (metadata == null ? 0 : metadata.length) + " bytes)");
    }
    ByteBuffer b = ByteBuffer.wrap(metadata).order(ByteOrder.LITTLE_ENDIAN);
    b.position(4);
    int n = b.getInt();
    if (n <= 0 || n > 64) {
      throw new IllegalArgumentException("transport bundle claims " + n + " entries");
    }
    List<Entry> out = new ArrayList<>(n);
    try {
      for (int i = 0; i < n; i++) {
        byte[] name = new byte[Short.toUnsignedInt(b.getShort())];
        b.get(name);
        int len = b.getInt();
        if (len < 0 || len > b.remaining()) {
          throw new IllegalArgumentException(
              "transport bundle entry #" + i + " claims " + len + " bytes");
        }
        byte[] blob = new byte[len];
        b.get(blob);
        out.add(new Entry(new String(name, StandardCharsets.UTF_8), blob));
      }
    } catch (java.nio.BufferUnderflowException e) {
      throw new IllegalArgumentException(
          "transport bundle is truncated after " + out.size() + " entries", e);
    }
    if (b.hasRemaining()) {
      throw new IllegalArgumentException(
          "transport bundle has " + b.remaining() + " trailing bytes");
    }
    return List.copyOf(out);
  }

  /**
   * The blob a {@code transport} endpoint should connect with: the bundle's entry for it, or {@code
   * metadata} itself when it is a single transport's blob (the backend then judges it).
   *
   * @throws TransportException naming the peer when the bundle offers no entry for {@code
   *     transport}
   */
  public static byte[] forTransport(String session, String transport, byte[] metadata) {
    if (!isBundle(metadata)) {
      return metadata;
    }
    List<Entry> entries;
    try {
      entries = decode(metadata);
    } catch (IllegalArgumentException e) {
      throw new TransportException(
          session,
          transport
              + " transport: metadata for peer '"
              + session
              + "' is unusable: "
              + e.getMessage(),
          e);
    }
    for (Entry e : entries) {
      if (e.transport().equals(transport)) {
        return e.metadata;
      }
    }
    throw new TransportException(
        session,
        transport
            + " transport: peer '"
            + session
            + "' does not serve "
            + transport
            + "; it offers "
            + names(entries));
  }

  /**
   * The transports a bundle (or, for a single blob, "one unnamed transport") offers, for messages.
   */
  public static List<String> names(List<Entry> entries) {
    return entries.stream().map(Entry::transport).toList();
  }
}
