package dev.mx.plan.merge;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.Shape;
import dev.mx.api.digest.TileDigests;
import dev.mx.api.error.MxException;
import dev.mx.api.error.ReplicaMismatchException;
import dev.mx.api.metadata.PublishedShard;
import dev.mx.api.metadata.PublishedTensor;
import dev.mx.api.metadata.ShardTable;
import dev.mx.api.plan.Shard;
import dev.mx.api.plan.SourceInfo;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Spreading reads over replicas: every receiver computes the same choice, the bytes each trainer
 * rank serves stay balanced, dead replicas are skipped, and a replica that differs fails.
 */
class ReplicaAssignmentTest {

  /**
   * Tables of a Megatron-like job: {@code tensors} tensors of {@code rows[i]} rows × 64 bf16
   * columns, each split by rows over {@code tp} ranks; the boxes of TP rank t are replicated over
   * {@code replicas} ranks (DP or EP), rank = t + tp·replica. Digests follow the box, so replicas
   * agree.
   */
  private static List<ShardTable> job(int tp, int replicas, long[] rows) {
    List<ShardTable> tables = new ArrayList<>();
    for (int rank = 0; rank < tp * replicas; rank++) {
      int t = rank % tp;
      String agent = "trainer-" + rank;
      List<PublishedTensor> tensors = new ArrayList<>();
      for (int i = 0; i < rows.length; i++) {
        long part = rows[i] / tp;
        long[] offset = {t * part, 0};
        tensors.add(
            new PublishedTensor(
                "w" + i,
                "torch.bfloat16",
                2,
                Shape.of(rows[i], 64),
                List.of(
                    new PublishedShard(
                        agent,
                        0,
                        4096L * (i + 1),
                        offset,
                        Shape.of(part, 64),
                        "d" + i + "-" + t))));
      }
      tables.add(new ShardTable(agent, "", new byte[0], tensors, null));
    }
    return tables;
  }

  private static long[] uneven(int n) {
    long[] rows = new long[n];
    for (int i = 0; i < n; i++) {
      rows[i] = 8L * (1 + (i * 7919L) % 13);
    }
    return rows;
  }

  /** Bytes each session serves when {@code receivers} receivers each read every shard whole. */
  private static Map<String, Long> served(MergedSources m, int receivers) {
    return served(m, receivers, session -> true);
  }

  /** As {@link #served(MergedSources, int)} with only the {@code live} sessions readable. */
  private static Map<String, Long> served(
      MergedSources m, int receivers, java.util.function.Predicate<String> live) {
    Map<String, Long> bytes = new LinkedHashMap<>();
    for (int r = 0; r < receivers; r++) {
      for (SourceInfo info :
          ReplicaAssignment.assign(m.sources(), m.replicas(), r, live).values()) {
        for (Shard s : info.shards()) {
          bytes.merge(s.session(), s.shape().numel() * s.elsize(), Long::sum);
        }
      }
    }
    return bytes;
  }

  /** Which session serves each box, e.g. {@code w0:trainer-2,trainer-1 w1:...}. */
  private static String sessions(Map<String, SourceInfo> assigned) {
    StringBuilder b = new StringBuilder();
    new java.util.TreeMap<>(assigned)
        .forEach(
            (name, info) ->
                b.append(name)
                    .append(':')
                    .append(
                        String.join(
                            ",",
                            info.shards().stream()
                                .sorted(
                                    java.util.Comparator.comparing(
                                        Shard::shardOffset, java.util.Arrays::compare))
                                .map(Shard::session)
                                .toList()))
                    .append(' '));
    return b.toString();
  }

  private static double busiestOverMean(Map<String, Long> bytes, int ranks) {
    assertEquals(ranks, bytes.size(), "every trainer rank serves: " + bytes);
    long max = bytes.values().stream().mapToLong(Long::longValue).max().orElseThrow();
    double mean = bytes.values().stream().mapToLong(Long::longValue).sum() / (double) ranks;
    return max / mean;
  }

  /**
   * One tensor of 4 × 64 bf16 on two ranks; rank 1's copy is listed as {@code replicaTiles} says.
   */
  private static MergedSources ownerAndReplica(String replicaDigest, TileDigests replicaTiles) {
    TileDigests tiles = new TileDigests(128, List.of("t0", "t1", "t2", "t3"));
    List<ShardTable> tables = new ArrayList<>();
    for (int rank = 0; rank < 2; rank++) {
      String agent = "trainer-" + rank;
      PublishedShard shard =
          new PublishedShard(
              agent,
              0,
              4096,
              new long[] {0, 0},
              Shape.of(4, 64),
              rank == 0 ? "d" : replicaDigest,
              rank == 0 ? tiles : replicaTiles);
      tables.add(
          new ShardTable(
              agent,
              "",
              new byte[0],
              List.of(
                  new PublishedTensor("w", "torch.bfloat16", 2, Shape.of(4, 64), List.of(shard))),
              null));
    }
    return ReplicaMerge.merge(tables);
  }

  @Test
  void aReplicaListedWithoutTileDigestsIsReadWithItsOwners() {
    MergedSources m = ownerAndReplica("d", null);
    // Receiver 1 starts on the other replica: trainer-1, verified with trainer-0's tiles.
    Shard read = ReplicaAssignment.assign(m.sources(), m.replicas(), 1).get("w").shards().get(0);
    assertEquals("trainer-1", read.session());
    assertEquals(List.of("t0", "t1", "t2", "t3"), read.tiles().digests());
    assertEquals(128, read.tiles().tileBytes());
    Shard owner = ReplicaAssignment.assign(m.sources(), m.replicas(), 0).get("w").shards().get(0);
    assertEquals("trainer-0", owner.session());
    assertEquals(List.of("t0", "t1", "t2", "t3"), owner.tiles().digests());
    // A replica that publishes no whole-shard digest is not vouched for: it gets no tiles.
    Shard unvouched =
        ReplicaAssignment.assign(
                ownerAndReplica(null, null).sources(), ownerAndReplica(null, null).replicas(), 1)
            .get("w")
            .shards()
            .get(0);
    assertEquals("trainer-1", unvouched.session());
    assertEquals(null, unvouched.tiles());
    // One whose digest differs fails before any read, naming both.
    MergedSources differing = ownerAndReplica("other", null);
    ReplicaMismatchException e =
        assertThrows(
            ReplicaMismatchException.class,
            () -> ReplicaAssignment.assign(differing.sources(), differing.replicas(), 1));
    assertTrue(
        e.getMessage().contains("trainer-0") && e.getMessage().contains("trainer-1"),
        e.getMessage());
  }

  @Test
  void twoReceiversComputeTheSameAssignmentFromTablesInAnyOrder() {
    List<ShardTable> tables = job(2, 2, uneven(20));
    List<ShardTable> reversed = new ArrayList<>(tables);
    java.util.Collections.reverse(reversed);
    String a = sessions(ReplicaMerge.merge(tables).assignedTo(1));
    assertEquals(a, sessions(ReplicaMerge.merge(reversed).assignedTo(1)));
    assertEquals(a, sessions(ReplicaMerge.merge(tables).assignedTo(1)));
    // Another receiver starts on other replicas.
    assertTrue(!a.equals(sessions(ReplicaMerge.merge(tables).assignedTo(0))), a);
  }

  @Test
  void dataParallelTwoIsBalancedWithinTenPercent() {
    MergedSources m = ReplicaMerge.merge(job(2, 2, uneven(20)));
    double ratio = busiestOverMean(served(m, 2), 4);
    assertTrue(ratio <= 1.10, "busiest / mean " + ratio);
  }

  /**
   * 128 TP-8 receivers each read their TP rank's slice of one tensor held by 4 replicas of a TP-8
   * trainer (a vocabulary-parallel embedding): the 16 receivers of a slice are ranks {@code j +
   * 8m}, and each of the slice's 4 holders serves 4 of them.
   */
  @Test
  void receiversOfOneSliceSpreadOverItsReplicasWhenTheirTpIsAMultipleOfTheReplicas() {
    MergedSources m = ReplicaMerge.merge(job(8, 4, new long[] {8 * 1024}));
    Map<String, Integer> reads = new java.util.TreeMap<>();
    for (int r = 0; r < 128; r++) {
      int slice = r % 8;
      for (Shard s : m.assignedTo(r).get("w0").shards()) {
        if (s.shardOffset()[0] == slice * 1024L) {
          reads.merge(s.session(), 1, Integer::sum);
        }
      }
    }
    assertEquals(32, reads.size(), reads.toString());
    assertTrue(reads.values().stream().allMatch(n -> n == 4), reads.toString());
  }

  @Test
  void theRotationFoldsTheRanksDigits() {
    assertEquals(0, ReplicaAssignment.rotation(5, 1));
    for (int r = 0; r < 4; r++) {
      assertEquals(r, ReplicaAssignment.rotation(r, 4), "ranks below n start at themselves");
    }
    assertEquals(0, ReplicaAssignment.rotation(0b11_10_01, 4), "digits 01, 10 and 11 fold to 00");
    assertEquals(3, ReplicaAssignment.rotation(0b01_10, 4), "digits 10 and 01 fold to 11");
    int[] starts = new int[3];
    for (int m = 0; m < 12; m++) {
      starts[ReplicaAssignment.rotation(5 + 8 * m, 3)]++;
    }
    assertEquals(12, starts[0] + starts[1] + starts[2]);
    assertTrue(starts[0] > 0 && starts[1] > 0 && starts[2] > 0, java.util.Arrays.toString(starts));
  }

  @Test
  void withoutReplicasOnlyTheOwnersServe() {
    MergedSources m = ReplicaMerge.merge(job(2, 2, uneven(20)));
    Set<String> owners = new java.util.HashSet<>();
    m.sources().values().forEach(i -> i.shards().forEach(s -> owners.add(s.session())));
    assertEquals(Set.of("trainer-0", "trainer-1"), owners);
  }

  @Test
  void expertParallelReplicasOfNonExpertWeightsAreBalanced() {
    // 8 EP ranks of TP 2 hold the non-expert weights; 16 receivers read them.
    MergedSources m = ReplicaMerge.merge(job(2, 8, uneven(40)));
    double ratio = busiestOverMean(served(m, 16), 16);
    assertTrue(ratio <= 1.25, "busiest / mean " + ratio);
  }

  @Test
  void eachBoxIsReadOnceFromAHolderOfIt() {
    MergedSources m = ReplicaMerge.merge(job(2, 2, uneven(5)));
    Map<String, SourceInfo> assigned = m.assignedTo(0);
    for (Map.Entry<String, SourceInfo> e : assigned.entrySet()) {
      List<Shard> owners = m.sources().get(e.getKey()).shards();
      assertEquals(owners.size(), e.getValue().shards().size());
      for (int i = 0; i < owners.size(); i++) {
        Shard chosen = e.getValue().shards().get(i);
        int rank = Integer.parseInt(chosen.session().substring("trainer-".length()));
        assertEquals(owners.get(i).session(), "trainer-" + rank % 2, "TP rank of " + chosen);
        assertEquals(owners.get(i).digest(), chosen.digest());
      }
    }
  }

  @Test
  void aDeadReplicaIsSkippedAndItsShareGoesToTheLiveOnes() {
    MergedSources m = ReplicaMerge.merge(job(2, 2, uneven(20)));
    Map<String, Long> bytes = served(m, 2, s -> !s.equals("trainer-2"));
    assertEquals(Set.of("trainer-0", "trainer-1", "trainer-3"), bytes.keySet());
    Map<String, Long> all = served(m, 2);
    long total = all.values().stream().mapToLong(Long::longValue).sum();
    assertEquals(total, bytes.values().stream().mapToLong(Long::longValue).sum());
    // TP rank 0's boxes now all come from trainer-0, the only live holder left.
    long tp0 = all.get("trainer-0") + all.get("trainer-2");
    assertEquals(tp0, bytes.get("trainer-0"));
  }

  @Test
  void aBoxWithNoLiveHolderFailsNamingIt() {
    MergedSources m = ReplicaMerge.merge(job(2, 2, uneven(3)));
    MxException e =
        assertThrows(
            MxException.class,
            () ->
                ReplicaAssignment.assign(
                    m.sources(),
                    m.replicas(),
                    0,
                    s -> !s.equals("trainer-0") && !s.equals("trainer-2")));
    assertTrue(e.getMessage().contains("'w0' at offset [0, 0]"), e.getMessage());
    assertTrue(e.getMessage().contains("[trainer-0, trainer-2]"), e.getMessage());
  }

  @Test
  void aReplicaWhoseBytesDifferFailsNamingBothRanks() {
    List<ShardTable> tables = new ArrayList<>(job(2, 2, uneven(3)));
    ShardTable t3 = tables.get(3);
    List<PublishedTensor> changed = new ArrayList<>(t3.tensors());
    PublishedTensor w1 = changed.get(1);
    PublishedShard s = w1.shards().getFirst();
    changed.set(
        1,
        new PublishedTensor(
            w1.name(),
            w1.dtype(),
            w1.elsize(),
            w1.fullShape(),
            List.of(
                new PublishedShard(
                    s.agentName(), 0, s.addr(), s.shardOffset(), s.shape(), "other"))));
    tables.set(3, new ShardTable(t3.agentName(), "", new byte[0], changed, null));
    MergedSources m = ReplicaMerge.merge(tables);
    ReplicaMismatchException e =
        assertThrows(ReplicaMismatchException.class, () -> m.assignedTo(0));
    assertEquals("w1", e.source());
    assertEquals("trainer-1", e.owner());
    assertEquals("trainer-3", e.replica());
    assertTrue(e.getMessage().contains("'trainer-1'") && e.getMessage().contains("'trainer-3'"));
  }
}
