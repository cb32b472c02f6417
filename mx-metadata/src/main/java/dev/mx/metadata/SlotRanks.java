package dev.mx.metadata;

import dev.mx.api.annotation.Internal;
import dev.mx.api.metadata.ShardTable;
import java.util.HashMap;
import java.util.Map;

/**
 * The rank checks of {@link Discovery#awaitConsistent} for the slots of one weight version, which a
 * receiver reads without a listing: each slot's table must belong to the expected job ({@link
 * Discovery.Expectation#requireRankOf}), a slot named by a trainer rank (a decimal string, as
 * {@code mx publish} names them) must hold a table declaring that rank, and no two slots may hold
 * tables declaring one rank. A slot's table that declares no topology (a ModelExpress publisher) is
 * taken as the rank its slot names. One instance checks one version.
 */
@Internal
public final class SlotRanks {
  private final Discovery.Expectation expected;
  private final String where;
  private final Map<Integer, String> claimed = new HashMap<>();

  /**
   * @param expected the job the tables must belong to, or null to check only slots against tables
   * @param where the store the tables came from, as errors name it
   */
  public SlotRanks(Discovery.Expectation expected, String where) {
    this.expected = expected;
    this.where = where;
  }

  /**
   * Checks the table of {@code slot}.
   *
   * @param who the slot and its publisher, as errors name them
   * @throws InconsistentSourcesException naming the slot and both ranks when the table declares
   *     another rank than the slot's, another job than the expected one, or a rank an earlier
   *     slot's table declared
   */
  public void require(ShardTable table, String slot, String who) {
    Integer slotRank = rankNamedBy(slot);
    Integer declared = table.topology() == null ? null : table.topology().rank();
    if (declared != null && slotRank != null && !declared.equals(slotRank)) {
      throw new InconsistentSourcesException(
          who
              + ": the slot is trainer rank "
              + slotRank
              + " but its table declares rank "
              + declared
              + " on "
              + where
              + "; refusing the version (the publisher's rank and slot disagree)");
    }
    Integer rank = declared != null ? declared : slotRank;
    if (expected != null && rank == null) {
      expected.requireDeclaredBy(table, who, where);
    } else if (expected != null) {
      rank = expected.requireRankOf(table, rank, who, where);
    }
    if (rank != null) {
      String earlier = claimed.putIfAbsent(rank, who);
      if (earlier != null) {
        throw new InconsistentSourcesException(
            "rank "
                + rank
                + " is claimed by more than one slot on "
                + where
                + ": "
                + earlier
                + " and "
                + who);
      }
    }
  }

  /** The trainer rank a slot's name spells, or null when it is not a decimal rank. */
  private static Integer rankNamedBy(String slot) {
    if (slot.isEmpty() || slot.length() > 9 || !slot.chars().allMatch(c -> c >= '0' && c <= '9')) {
      return null;
    }
    return Integer.parseInt(slot);
  }
}
