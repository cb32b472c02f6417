package dev.mx.api.metadata;

import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Objects;

/**
 * One publisher's contribution to a version: its shard table (the encoded {@code
 * mx.reshard.shard_table.v1} blob) and the table's SHA-256, which a receiver checks against the
 * bytes it fetched before trusting them.
 *
 * @param versionId the version
 * @param slot the publisher slot (trainer rank) this table fills
 * @param workerId the publishing process; a slot belongs to one worker
 * @param table the shard table bytes (empty in listings that leave tables out)
 * @param tableDigest lower-case hex SHA-256 of {@code table} as the publisher computed it
 * @param status READY, or STALE once the publisher went away
 * @param transport the transport the publisher declared for its table's agent metadata where the
 *     store records one apart from the table (a RefitService shard record's {@code transport}, e.g.
 *     {@code NIXL} from ModelExpress's trainer adapters); null where the table itself says (mx's
 *     publishers)
 */
public record VersionSlot(
    String versionId,
    String slot,
    String workerId,
    byte[] table,
    String tableDigest,
    SlotStatus status,
    String transport) {

  public VersionSlot {
    Objects.requireNonNull(versionId, "version id");
    Objects.requireNonNull(slot, "slot of version " + versionId);
    Objects.requireNonNull(workerId, "worker id of slot " + slot);
    Objects.requireNonNull(table, "table of slot " + slot);
    Objects.requireNonNull(tableDigest, "table digest of slot " + slot);
    Objects.requireNonNull(status, "status of slot " + slot);
    table = table.clone();
  }

  /** A slot whose table says which transport its agent metadata is for. */
  public VersionSlot(
      String versionId,
      String slot,
      String workerId,
      byte[] table,
      String tableDigest,
      SlotStatus status) {
    this(versionId, slot, workerId, table, tableDigest, status, null);
  }

  /** A READY slot whose digest is computed here from {@code table}. */
  public static VersionSlot of(String versionId, String slot, String workerId, byte[] table) {
    return new VersionSlot(versionId, slot, workerId, table, sha256Hex(table), SlotStatus.READY);
  }

  @Override
  public byte[] table() {
    return table.clone();
  }

  /** Lower-case hex SHA-256 of {@code bytes}. */
  public static String sha256Hex(byte[] bytes) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("this JVM has no SHA-256", e);
    }
  }

  /** Whether the table's bytes hash to the advertised digest. */
  public boolean digestMatches() {
    return sha256Hex(table).equals(tableDigest.toLowerCase(java.util.Locale.ROOT));
  }

  /**
   * This slot when its table hashes to its digest.
   *
   * @throws WeightVersionException with {@link WeightVersionException.Reason#DIGEST_MISMATCH},
   *     naming the version, slot and worker, when it does not
   */
  public VersionSlot verified(String model) {
    if (!digestMatches()) {
      throw new WeightVersionException(
          WeightVersionException.Reason.DIGEST_MISMATCH,
          "slot '"
              + slot
              + "' of version '"
              + versionId
              + "' of '"
              + model
              + "' (worker '"
              + workerId
              + "'): the shard table's"
              + " SHA-256 is "
              + sha256Hex(table)
              + " but the publisher advertised "
              + tableDigest
              + "; refusing the table");
    }
    return this;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof VersionSlot s
        && versionId.equals(s.versionId)
        && slot.equals(s.slot)
        && workerId.equals(s.workerId)
        && java.util.Arrays.equals(table, s.table)
        && tableDigest.equals(s.tableDigest)
        && status == s.status;
  }

  @Override
  public int hashCode() {
    return Objects.hash(
        versionId, slot, workerId, java.util.Arrays.hashCode(table), tableDigest, status);
  }

  @Override
  public String toString() {
    return "VersionSlot["
        + versionId
        + "/"
        + slot
        + " by "
        + workerId
        + ", "
        + table.length
        + " bytes, sha256 "
        + tableDigest
        + ", "
        + status
        + "]";
  }
}
