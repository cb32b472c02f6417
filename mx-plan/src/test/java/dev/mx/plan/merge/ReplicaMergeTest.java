package dev.mx.plan.merge;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.metadata.PublishedShard;
import dev.mx.api.metadata.PublishedTensor;
import dev.mx.api.metadata.ReplicaShard;
import dev.mx.api.metadata.ShardTable;
import dev.mx.api.plan.CaptureResult;
import dev.mx.api.plan.RecordedCopy;
import dev.mx.api.plan.Shard;
import dev.mx.api.plan.SourceInfo;
import dev.mx.api.plan.TransferPlan;
import dev.mx.plan.ReshardPlanner;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** ModelExpress (ARCHITECTURE §7.9) {@code test_reshard_refit_replica_merge.py}. */
class ReplicaMergeTest {
  private static final Shape G = Shape.of(4, 8);

  private static ShardTable table(String agent, PublishedTensor... tensors) {
    return new ShardTable(agent, agent + ":5555", new byte[0], List.of(tensors), null);
  }

  private static PublishedTensor tensor(
      String name, String agent, long addr, long[] offset, Shape shape) {
    return new PublishedTensor(
        name,
        "torch.float32",
        4,
        G,
        List.of(new PublishedShard(agent, 3, addr, offset, shape, "d-" + agent)));
  }

  private static PublishedTensor whole(String name, String agent, long addr) {
    return tensor(name, agent, addr, new long[] {0, 0}, G);
  }

  @Test
  void eightReplicasCollapseToTheFirstOwner() {
    List<ShardTable> tables = new ArrayList<>();
    for (int r = 0; r < 8; r++) {
      tables.add(table("dp" + r, whole("w", "dp" + r, 1000L * (r + 1))));
    }
    MergedSources m = ReplicaMerge.merge(tables);
    SourceInfo w = m.sources().get("w");
    assertEquals(List.of(new Shard(new long[] {0, 0}, G, "dp0", 1000, 4, "d-dp0")), w.shards());
    assertEquals(DType.F32, w.dtype());
    assertEquals(Map.of("dp0", "dp0"), m.sessionToAgent());
    assertEquals(Map.of("dp0", 3), m.sessionToDevice());
    assertEquals(8, m.agentEndpoints().size());
    assertEquals("dp5:5555", m.agentEndpoints().get("dp5"));
  }

  /** A table of {@code agent} owning {@code owned} and holding whole-{@code G} replicas. */
  private static ShardTable withReplicas(
      String agent, List<PublishedTensor> owned, List<String> replicaOf, long addr) {
    List<ReplicaShard> replicas = new ArrayList<>();
    for (String name : replicaOf) {
      replicas.add(
          new ReplicaShard(
              name, new PublishedShard(agent, 1, addr, new long[] {0, 0}, G, "d-" + agent)));
    }
    return new ShardTable(agent, agent + ":5555", new byte[0], owned, null, null, replicas);
  }

  @Test
  void replicasListedApartJoinTheirOwnersBoxWhicheverTableComesFirst() {
    MergedSources m =
        ReplicaMerge.merge(
            List.of(
                withReplicas("ep1", List.of(), List.of("w"), 7000),
                table("ep0", whole("w", "ep0", 1000)),
                table("ep2", whole("w", "ep2", 3000))));
    assertEquals(
        List.of(new Shard(new long[] {0, 0}, G, "ep0", 1000, 4, "d-ep0")),
        m.sources().get("w").shards());
    // The tables' own offers first, then those listed apart, in table order.
    assertEquals(
        List.of(
            new Shard(new long[] {0, 0}, G, "ep2", 3000, 4, "d-ep2"),
            new Shard(new long[] {0, 0}, G, "ep1", 7000, 4, "d-ep1")),
        m.replicas().get("w"));
    assertEquals("ep1:5555", m.agentEndpoints().get("ep1"));
  }

  @Test
  void aReplicaOfABoxNoTableListsIsRefusedNamingPublisherAndTensor() {
    IllegalArgumentException unknown =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                ReplicaMerge.merge(
                    List.of(
                        table("ep0", whole("w", "ep0", 1000)),
                        withReplicas("ep1", List.of(), List.of("v"), 7000))));
    assertEquals(
        "publisher 'ep1' lists a replica of tensor 'v' at [0, 0] shape [4, 8], but no publisher"
            + " lists the tensor",
        unknown.getMessage());
    IllegalArgumentException otherBox =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                ReplicaMerge.merge(
                    List.of(
                        table("ep0", tensor("w", "ep0", 1000, new long[] {0, 0}, Shape.of(2, 8))),
                        withReplicas("ep1", List.of(), List.of("w"), 7000))));
    assertTrue(
        otherBox.getMessage().endsWith("but no publisher lists that box of it (the owner's)"),
        otherBox.getMessage());
  }

  @Test
  void dedupRemovesReadsAndMakesFullPullsPossible() {
    List<ShardTable> tables =
        List.of(table("a", whole("w", "a", 1000)), table("b", whole("w", "b", 2000)));
    RecordedCopy c =
        RecordedCopy.contiguous(
            "w",
            List.of(dev.mx.api.plan.OpSpec.narrow(1, 0, 4)),
            "p",
            0,
            Shape.of(4, 4),
            DType.F32);
    ReshardPlanner planner = new ReshardPlanner(dev.mx.api.util.Settings.of(Map.of(), Map.of()));
    // without merge both replicas are read (8 runs) and no dim-0 partition exists
    SourceInfo raw =
        new SourceInfo(
            G,
            DType.F32,
            List.of(
                new Shard(new long[] {0, 0}, G, "a", 1000, 4, null),
                new Shard(new long[] {0, 0}, G, "b", 2000, 4, null)));
    TransferPlan unmerged = planner.plan(CaptureResult.of(List.of(c)), Map.of("w", raw), 2);
    assertEquals(8, unmerged.segments().size());
    assertEquals(List.of("w"), unmerged.unboundedSources());
    TransferPlan merged =
        planner.plan(CaptureResult.of(List.of(c)), ReplicaMerge.merge(tables).sources(), 2);
    assertEquals(1, merged.fullPulls().size());
    assertEquals(1, merged.descriptorCount());
    assertEquals("a", merged.fullPulls().get(0).segments().get(0).session());
  }

  @Test
  void distinctGeometryIsKeptAndReplicatedFanInCollapsesPerGeometry() {
    // TP=2 x DP=2: two column halves, each published twice
    List<ShardTable> tables = new ArrayList<>();
    for (int dp = 0; dp < 2; dp++) {
      for (int tp = 0; tp < 2; tp++) {
        String agent = "dp" + dp + "tp" + tp;
        tables.add(
            table(
                agent,
                tensor(
                    "w",
                    agent,
                    100L * (dp * 2 + tp + 1),
                    new long[] {0, 4L * tp},
                    Shape.of(4, 4))));
      }
    }
    SourceInfo w = ReplicaMerge.merge(tables).sources().get("w");
    assertEquals(2, w.shards().size());
    assertEquals("dp0tp0", w.shards().get(0).session());
    assertEquals("dp0tp1", w.shards().get(1).session());
    assertEquals(4, w.shards().get(1).shardOffset(1));
  }

  @Test
  void inconsistentShapeOrDtypeNamesTheTensorAndBothPublishers() {
    PublishedTensor other =
        new PublishedTensor(
            "w",
            "torch.float32",
            4,
            Shape.of(4, 9),
            List.of(new PublishedShard("b", 0, 1, new long[] {0, 0}, Shape.of(4, 9), null)));
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                ReplicaMerge.mergeShardTables(
                    List.of(table("a", whole("w", "a", 1)), table("b", other))));
    assertTrue(e.getMessage().contains("tensor 'w'"), e.getMessage());
    assertTrue(
        e.getMessage().contains("publisher 'a'") && e.getMessage().contains("publisher 'b'"),
        e.getMessage());
    assertTrue(e.getMessage().contains("[4, 9]"), e.getMessage());

    PublishedTensor bf16 =
        new PublishedTensor(
            "w",
            "torch.bfloat16",
            2,
            G,
            List.of(new PublishedShard("c", 0, 1, new long[] {0, 0}, G, null)));
    e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                ReplicaMerge.mergeShardTables(
                    List.of(table("a", whole("w", "a", 1)), table("c", bf16))));
    assertTrue(
        e.getMessage().contains("torch.bfloat16") && e.getMessage().contains("publisher 'c'"),
        e.getMessage());

    // the same dtype spelled differently is no disagreement
    PublishedTensor spelled =
        new PublishedTensor(
            "w",
            "float32",
            4,
            G,
            List.of(new PublishedShard("d", 0, 7, new long[] {0, 0}, G, null)));
    assertEquals(
        1,
        ReplicaMerge.mergeShardTables(List.of(table("a", whole("w", "a", 1)), table("d", spelled)))
            .get(0)
            .shards()
            .size());

    PublishedTensor unknown = new PublishedTensor("x", "torch.complex64", 8, G, List.of());
    e =
        assertThrows(
            IllegalArgumentException.class, () -> ReplicaMerge.merge(List.of(table("e", unknown))));
    assertTrue(e.getMessage().contains("tensor 'x' from publisher 'e'"), e.getMessage());
  }

  @Test
  void dedupIsPerTensorName() {
    MergedSources m =
        ReplicaMerge.merge(
            List.of(
                table("a", whole("w1", "a", 1000), whole("w2", "a", 2000)),
                table("b", whole("w2", "b", 3000), whole("w1", "b", 4000))));
    assertEquals(List.of("w1", "w2"), List.copyOf(m.sources().keySet()));
    assertEquals(1000, m.sources().get("w1").shards().get(0).addr());
    assertEquals(2000, m.sources().get("w2").shards().get(0).addr());
    assertEquals(1, m.sources().get("w2").shards().size());
  }

  @Test
  void malformedShardNamesTensorShardAndPublisher() {
    PublishedTensor bad =
        new PublishedTensor(
            "w",
            "torch.float32",
            4,
            G,
            List.of(
                whole("w", "a", 1).shards().get(0),
                new PublishedShard("b", 0, 1, new long[] {0}, G, null)));
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class, () -> ReplicaMerge.merge(List.of(table("a", bad))));
    assertTrue(e.getMessage().startsWith("tensor 'w' shard #1 from publisher 'b'"), e.getMessage());
    PublishedTensor badSize = new PublishedTensor("w", "torch.float32", 2, G, List.of());
    e =
        assertThrows(
            IllegalArgumentException.class, () -> ReplicaMerge.merge(List.of(table("a", badSize))));
    assertTrue(e.getMessage().contains("elsize 2"), e.getMessage());
  }
}
