package dev.mx.rl.store;

import dev.mx.api.metadata.SourceRecord;
import dev.mx.api.metadata.SourceStatus;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

/**
 * What one process serves under its directory shard record of a name (an identity or a model): its
 * source records of that identity and the versions of that model it created. RefitService has no
 * listing of either, so receivers ask the publishers themselves.
 *
 * @param records the process's records, blobs included
 * @param versions the versions it created and still holds
 */
record DirectoryEntry(List<SourceRecord> records, List<KnownVersion> versions) {
  private static final int MAGIC = 0x4d584431; // "MXD1"

  /** A version as its creator knows it: mx's id, RefitService's uid, the step. */
  record KnownVersion(String id, String uid, long step) {}

  static byte[] encode(
      String identity, Collection<SourceRecord> records, Collection<KnownVersion> versions) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      out.writeInt(MAGIC);
      out.writeUTF(identity);
      out.writeInt(records.size());
      for (SourceRecord r : records) {
        out.writeUTF(r.workerId());
        out.writeInt(r.rank());
        byte[] blob = r.blob();
        out.writeInt(blob.length);
        out.write(blob);
        out.writeUTF(r.status().name());
        out.writeLong(r.updatedAtMillis());
        out.writeLong(r.progress());
        out.writeUTF(r.phase());
      }
      out.writeInt(versions.size());
      for (KnownVersion v : versions) {
        out.writeUTF(v.id());
        out.writeUTF(v.uid());
        out.writeLong(v.step());
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return bytes.toByteArray();
  }

  /**
   * Decodes an entry served for {@code identity}.
   *
   * @throws IllegalArgumentException naming {@code from} when the bytes are not such an entry
   */
  static DirectoryEntry decode(String identity, byte[] bytes, String from) {
    try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes))) {
      if (in.readInt() != MAGIC) {
        throw new IllegalArgumentException(
            from + " served something other than an mx directory entry");
      }
      String served = in.readUTF();
      if (!served.equals(identity)) {
        throw new IllegalArgumentException(
            from + " served the entry of '" + served + "' when asked for '" + identity + "'");
      }
      List<SourceRecord> records = new ArrayList<>();
      for (int n = in.readInt(); n > 0; n--) {
        String worker = in.readUTF();
        int rank = in.readInt();
        byte[] blob = in.readNBytes(in.readInt());
        SourceStatus status = SourceStatus.valueOf(in.readUTF());
        records.add(
            new SourceRecord(
                identity, worker, rank, blob, status, in.readLong(), in.readLong(), in.readUTF()));
      }
      List<KnownVersion> versions = new ArrayList<>();
      for (int n = in.readInt(); n > 0; n--) {
        versions.add(new KnownVersion(in.readUTF(), in.readUTF(), in.readLong()));
      }
      return new DirectoryEntry(records, versions);
    } catch (IOException | RuntimeException e) {
      if (e instanceof IllegalArgumentException iae) {
        throw iae;
      }
      throw new IllegalArgumentException(from + " served a truncated directory entry: " + e, e);
    }
  }
}
