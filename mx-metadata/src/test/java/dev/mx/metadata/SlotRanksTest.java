package dev.mx.metadata;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.metadata.PublisherTopology;
import dev.mx.api.metadata.ShardTable;
import org.junit.jupiter.api.Test;

/**
 * The rank checks a weight version's receiver makes of each slot's table (issue 23), the same
 * refusals plain discovery makes of listed publishers.
 */
class SlotRanksTest {
  private static final String TP2 = "megatron tp=2 pp=1 ep=1";
  private static final String STORE = "file:/tmp/store";

  private static ShardTable declaring(int rank, int world) {
    return TestTables.table("agent-" + rank, 1, 3L, true)
        .withTopology(new PublisherTopology(rank, world, TP2));
  }

  @Test
  void aSlotWhoseTableDeclaresAnotherRankIsRefusedNamingTheSlotAndBothRanks() {
    SlotRanks ranks = new SlotRanks(new Discovery.Expectation(2, TP2), STORE);
    ranks.require(declaring(0, 2), "0", "slot '0'");
    InconsistentSourcesException e =
        assertThrows(
            InconsistentSourcesException.class,
            () -> ranks.require(declaring(0, 2), "1", "slot '1' of version 'step-3'"));
    assertTrue(
        e.getMessage().contains("slot '1' of version 'step-3'")
            && e.getMessage().contains("the slot is trainer rank 1")
            && e.getMessage().contains("declares rank 0")
            && e.getMessage().contains(STORE),
        e.getMessage());
  }

  @Test
  void withoutAnExpectationTheSlotIsStillHeldToItsRank() {
    SlotRanks ranks = new SlotRanks(null, STORE);
    InconsistentSourcesException e =
        assertThrows(
            InconsistentSourcesException.class,
            () -> ranks.require(declaring(1, 2), "0", "slot '0'"));
    assertTrue(
        e.getMessage().contains("trainer rank 0 but its table declares rank 1"), e.getMessage());
  }

  @Test
  void slotsNotNamedByRanksMayNotDeclareOneRankTwice() {
    SlotRanks ranks = new SlotRanks(null, STORE);
    ranks.require(declaring(0, 2), "left", "slot 'left'");
    InconsistentSourcesException e =
        assertThrows(
            InconsistentSourcesException.class,
            () -> ranks.require(declaring(0, 2), "right", "slot 'right'"));
    assertTrue(
        e.getMessage().contains("rank 0 is claimed by more than one slot")
            && e.getMessage().contains("slot 'left' and slot 'right'"),
        e.getMessage());
  }

  @Test
  void anUndeclaredTableIsTakenAsItsSlotsRankAndHeldToTheJob() {
    SlotRanks ranks = new SlotRanks(new Discovery.Expectation(2, TP2), STORE);
    ShardTable undeclared = TestTables.table("agent-mx", 1, 3L, true);
    assertDoesNotThrow(() -> ranks.require(undeclared, "1", "slot '1'"));
    InconsistentSourcesException e =
        assertThrows(
            InconsistentSourcesException.class, () -> ranks.require(undeclared, "2", "slot '2'"));
    assertTrue(
        e.getMessage().contains("slot '2' claims rank 2")
            && e.getMessage().contains("(ranks 0..1)"),
        e.getMessage());
  }

  @Test
  void aTableOfAnotherJobIsRefusedNamingBothTopologies() {
    SlotRanks ranks = new SlotRanks(new Discovery.Expectation(4, null), STORE);
    InconsistentSourcesException e =
        assertThrows(
            InconsistentSourcesException.class,
            () -> ranks.require(declaring(1, 2), "1", "slot '1'"));
    assertTrue(
        e.getMessage().contains("expects trainer topology a trainer job (4 ranks)")
            && e.getMessage().contains("declares " + TP2 + " (2 ranks)"),
        e.getMessage());
  }
}
