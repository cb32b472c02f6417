package dev.mx.metadata;

import dev.mx.api.annotation.Internal;
import dev.mx.api.metadata.VersionSlot;
import dev.mx.api.metadata.WeightVersion;
import dev.mx.api.metadata.WeightVersionException;
import dev.mx.api.metadata.WeightVersionException.Reason;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Argument checks and error messages every weight-version store of this module shares, so all say
 * the same.
 */
@Internal
public final class VersionRules {
  private VersionRules() {}

  /** Rejects a null or empty name, naming what it is. */
  public static void requireName(String uri, String what, String value) {
    if (value == null || value.isEmpty()) {
      throw new IllegalArgumentException(uri + ": " + what + " must be a non-empty string");
    }
  }

  /** The expected slots, sorted; rejects an empty list, blank or duplicate slots. */
  public static List<String> expectedSlots(String uri, String versionId, List<String> slots) {
    if (slots == null || slots.isEmpty()) {
      throw new IllegalArgumentException(
          uri + ": version '" + versionId + "' needs at least one expected slot");
    }
    Set<String> seen = new HashSet<>();
    for (String s : slots) {
      if (s == null || s.isBlank()) {
        throw new IllegalArgumentException(
            uri + ": version '" + versionId + "' has a blank expected slot");
      }
      if (!seen.add(s)) {
        throw new IllegalArgumentException(
            uri + ": version '" + versionId + "' lists slot '" + s + "' twice");
      }
    }
    return slots.stream().sorted().toList();
  }

  /** A lease TTL in milliseconds; rejects one that is not positive. */
  public static long ttlMillis(String uri, Duration ttl) {
    if (ttl == null || ttl.isNegative() || ttl.isZero()) {
      throw new IllegalArgumentException(uri + ": a lease TTL must be positive, got " + ttl);
    }
    return Math.max(1, ttl.toMillis());
  }

  /**
   * Rejects a slot whose table does not hash to its advertised digest, before anything is stored.
   */
  public static void checkDigest(String uri, String model, VersionSlot slot) {
    requireName(uri, "slot", slot.slot());
    requireName(uri, "worker id", slot.workerId());
    try {
      slot.verified(model);
    } catch (WeightVersionException e) {
      throw new WeightVersionException(Reason.DIGEST_MISMATCH, uri + ": " + e.getMessage(), e);
    }
  }

  public static WeightVersionException notFound(String uri, String model, String versionId) {
    return new WeightVersionException(
        Reason.NOT_FOUND,
        uri
            + ": no version '"
            + versionId
            + "' of '"
            + model
            + "' (never created, or released and reclaimed)");
  }

  public static WeightVersionException wrongState(String uri, WeightVersion v, String what) {
    return new WeightVersionException(Reason.WRONG_STATE, uri + ": " + v.describe() + ": " + what);
  }

  public static WeightVersionException unknownSlot(String uri, WeightVersion v, String slot) {
    return new WeightVersionException(
        Reason.UNKNOWN_SLOT,
        uri
            + ": "
            + v.describe()
            + " does not expect slot '"
            + slot
            + "' (expected "
            + v.expectedSlots()
            + ")");
  }

  public static WeightVersionException slotConflict(
      String uri, WeightVersion v, VersionSlot claim, String holder, String heldDigest) {
    return new WeightVersionException(
        Reason.CONFLICT,
        uri
            + ": slot '"
            + claim.slot()
            + "' of "
            + v.describe()
            + " is held by worker '"
            + holder
            + "' (table sha256 "
            + heldDigest
            + "); worker '"
            + claim.workerId()
            + "' cannot claim it with table sha256 "
            + claim.tableDigest());
  }

  public static WeightVersionException notOwner(
      String uri, WeightVersion v, String slot, String worker, String owner) {
    return new WeightVersionException(
        Reason.CONFLICT,
        uri
            + ": slot '"
            + slot
            + "' of "
            + v.describe()
            + " belongs to worker '"
            + owner
            + "', not '"
            + worker
            + "'");
  }

  public static WeightVersionException leaseLost(String uri, WeightVersion v, String holder) {
    return new WeightVersionException(
        Reason.LEASE_LOST,
        uri
            + ": '"
            + holder
            + "' holds no live lease on "
            + v.describe()
            + " (it expired or was never taken)");
  }
}
