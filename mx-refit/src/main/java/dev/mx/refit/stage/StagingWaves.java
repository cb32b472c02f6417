package dev.mx.refit.stage;

import dev.mx.api.annotation.Internal;
import dev.mx.api.error.MxException;
import dev.mx.api.util.Settings;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Splits the staged shards of a plan into waves that each fit the receiver's staging budget ({@code
 * mx.receiver.staging-bytes}): wave 0 travels with every exact, full-pull and convert read, each
 * later wave reuses the same staging memory once the previous wave's shards were verified and
 * copied out. Full-pull and convert staging is held for the whole refit (its re-slice and casts run
 * after the wire), so it counts against every wave.
 *
 * @param waves the staged shards of each wave, in plan order (at least one wave, possibly empty)
 * @param waveBytes the staging bytes the largest wave needs
 * @param budget the budget the waves were cut for
 */
@Internal
public record StagingWaves(List<List<ShardStaging.Staged>> waves, long waveBytes, long budget) {

  /** The setting naming the staging budget in bytes. */
  public static final String PROPERTY = "mx.receiver.staging-bytes";

  /** Its environment variable. */
  public static final String ENV = "MX_RECEIVER_STAGING_BYTES";

  /**
   * The budget when none is set: 64 MiB, or what the largest unit needs when that is more (an unset
   * budget never fails a plan; a set one does).
   */
  public static final long DEFAULT_BYTES = 64L << 20;

  /** Thrown when a budget the user set cannot hold a unit that must be staged whole. */
  public static final class BudgetException extends MxException {
    private static final long serialVersionUID = 1L;
    private final long neededBytes;

    BudgetException(String message, long neededBytes) {
      super(message);
      this.neededBytes = neededBytes;
    }

    /** The smallest budget that holds this plan's staging. */
    public long neededBytes() {
      return neededBytes;
    }
  }

  /**
   * The budget set in {@code settings} ({@value #PROPERTY} or {@value #ENV}), or -1 when none is
   * (for callers sizing a reservation before a receiver exists; a receiver takes its budget from
   * its {@link dev.mx.refit.ReceiverContext}).
   *
   * @throws IllegalArgumentException naming the setting when it is not a positive number of bytes
   */
  public static long configured(Settings settings) {
    return dev.mx.refit.ReceiverContext.stagingBytes(settings).orElse(-1);
  }

  /** Parses {@code 123}, {@code 64k}, {@code 64m} or {@code 2g} (binary units). */
  public static long parseBytes(String v) {
    String s = v.toLowerCase(Locale.ROOT);
    int shift = 0;
    if (s.endsWith("ib")) {
      s = s.substring(0, s.length() - 2);
    } else if (s.endsWith("b")) {
      s = s.substring(0, s.length() - 1);
    }
    if (!s.isEmpty()) {
      switch (s.charAt(s.length() - 1)) {
        case 'k' -> shift = 10;
        case 'm' -> shift = 20;
        case 'g' -> shift = 30;
        case 't' -> shift = 40;
        default -> shift = 0;
      }
    }
    if (shift > 0) {
      s = s.substring(0, s.length() - 1);
    }
    long n = Long.parseLong(s.trim());
    if (n > (Long.MAX_VALUE >> shift)) {
      throw new NumberFormatException("byte count " + v + " overflows");
    }
    return n << shift;
  }

  /**
   * Cuts the waves.
   *
   * @param staged the staged shards, in plan order
   * @param heldBytes full-pull and convert staging held for the whole refit
   * @param largestHeld the name of the largest full-pull or convert unit (for the error), or null
   * @param configured the budget the user set, or empty for {@code auto}
   * @param rank named in the error
   * @throws BudgetException when a set budget cannot hold the held staging plus the largest staged
   *     shard, naming the budget, the unit and the bytes needed
   */
  public static StagingWaves cut(
      List<ShardStaging.Staged> staged,
      long heldBytes,
      String largestHeld,
      java.util.OptionalLong configured,
      int rank) {
    ShardStaging.Staged largest = null;
    for (ShardStaging.Staged s : staged) {
      if (largest == null || s.stagingBytes() > largest.stagingBytes()) {
        largest = s;
      }
    }
    long largestShard = largest == null ? 0 : largest.stagingBytes();
    long needed = Math.addExact(heldBytes, aligned(largestShard));
    long budget = configured.orElse(Math.max(DEFAULT_BYTES, needed));
    if (needed > budget) {
      String unit =
          largest != null && aligned(largestShard) >= heldBytes
              ? "staged shard at "
                  + java.util.Arrays.toString(largest.shard().shardOffset())
                  + " of tensor '"
                  + largest.source()
                  + "' ("
                  + largestShard
                  + " bytes)"
              : "full-pull and convert staging of "
                  + heldBytes
                  + " bytes (largest: '"
                  + largestHeld
                  + "')";
      throw new BudgetException(
          String.format(
              Locale.ROOT,
              "rank %d: the staging budget %s=%d bytes cannot hold %s: it needs at least %d bytes"
                  + " (%d held for the whole refit + the largest staged shard, %d); raise %s",
              rank,
              PROPERTY,
              budget,
              unit,
              needed,
              heldBytes,
              largestShard,
              PROPERTY),
          needed);
    }
    long room = budget - heldBytes;
    List<List<ShardStaging.Staged>> waves = new ArrayList<>();
    List<ShardStaging.Staged> current = new ArrayList<>();
    long used = 0;
    long widest = 0;
    for (ShardStaging.Staged s : staged) {
      long n = aligned(s.stagingBytes());
      if (used + n > room && !current.isEmpty()) {
        waves.add(current);
        widest = Math.max(widest, used);
        current = new ArrayList<>();
        used = 0;
      }
      current.add(s);
      used += n;
    }
    waves.add(current);
    widest = Math.max(widest, used);
    return new StagingWaves(List.copyOf(waves), widest, budget);
  }

  private static long aligned(long n) {
    return (n + 63) & -64L;
  }
}
