package dev.mx.refit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.error.ReplicaMismatchException;
import dev.mx.api.plan.CaptureResult;
import dev.mx.api.plan.RecordedCopy;
import dev.mx.api.plan.Shard;
import dev.mx.api.plan.SourceInfo;
import dev.mx.api.refit.Capture;
import dev.mx.api.refit.ParamSpec;
import dev.mx.digest.ShardDigest;
import dev.mx.plan.ReshardPlanner;
import java.lang.foreign.MemorySegment;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A receiver reading a DP=2 trainer: owners {@code t0}, {@code t1} (rows 0-1 and 2-3 of {@code w})
 * and their replicas {@code r0}, {@code r1}, all real publishers over the mem transport.
 */
class ReplicaSpreadingTest {
  private static final Shape HALF = Shape.of(2, 4);

  private static Shard shard(String session, long row, MemorySegment bytes) {
    return new Shard(
        new long[] {row, 0}, HALF, session, bytes.address(), 4, ShardDigest.digest(bytes));
  }

  /**
   * Owners t0, t1 holding rows 0-1 and 2-3 of w (values 0..15); replicas r0 (t0's bytes) and r1,
   * whose values start at {@code r1Start} (8: t1's bytes).
   */
  private record Job(SourceInfo owners, List<Shard> replicas) {
    static Job of(TestCluster cluster, int r1Start) {
      MemorySegment t0 = cluster.tensor("t0", DType.F32, TestCluster.arange(0, 8));
      MemorySegment t1 = cluster.tensor("t1", DType.F32, TestCluster.arange(8, 16));
      MemorySegment r0 = cluster.tensor("r0", DType.F32, TestCluster.arange(0, 8));
      MemorySegment r1 = cluster.tensor("r1", DType.F32, TestCluster.arange(r1Start, r1Start + 8));
      return new Job(
          new SourceInfo(
              Shape.of(4, 4), DType.F32, List.of(shard("t0", 0, t0), shard("t1", 2, t1))),
          List.of(shard("r0", 0, r0), shard("r1", 2, r1)));
    }
  }

  /** Reads all of {@code w} into {@code p} and returns the metrics. */
  private static Map<String, Object> refit(
      TestCluster cluster, SourceInfo owners, List<Shard> replicas, Map<String, byte[]> peers) {
    Capture capture =
        new Capture(
            CaptureResult.of(
                List.of(
                    RecordedCopy.contiguous("w", List.of(), "p", 0, Shape.of(4, 4), DType.F32))),
            Map.of("p", new ParamSpec(Shape.of(4, 4), DType.F32)));
    RecordingInstaller installer = new RecordingInstaller(null);
    try (Receiver r =
        Receiver.builder()
            .config(ReceiverConfig.defaults())
            .settings(dev.mx.api.util.Settings.of(Map.of(), Map.of()))
            .planner(new ReshardPlanner(dev.mx.api.util.Settings.of(Map.of(), Map.of())))
            .transport(cluster.receiver)
            .discovery(
                SourceDiscovery.fixed(
                    new DiscoveredSources(Map.of("w", owners), peers, null, Map.of("w", replicas))))
            .geometry(m -> capture)
            .installer(installer)
            .records(new CapturingRecords())
            .build()) {
      Map<String, Object> m = r.updateWeights(1);
      assertArrayEquals(TestCluster.arange(0, 16), installer.floats("p"));
      return m;
    }
  }

  @Test
  void oneReceiverReadsEachHalfFromADifferentReplica() {
    try (TestCluster cluster = new TestCluster()) {
      Job job = Job.of(cluster, 8);
      Map<String, Object> m = refit(cluster, job.owners(), job.replicas(), cluster.peerMetadata());
      @SuppressWarnings("unchecked")
      Map<String, Long> served = (Map<String, Long>) m.get("bytes_by_session");
      // Two equal boxes, two holders each: the greedy gives the second box to the holder not yet
      // charged, so the receiver reads 32 bytes from each of two different sessions.
      assertEquals(2, served.size(), served.toString());
      served.values().forEach(v -> assertEquals(32L, v, served.toString()));
      assertTrue(
          !served.keySet().equals(java.util.Set.of("t0", "t1")), "replicas serve: " + served);
    }
  }

  @Test
  void anUnreachableReplicaIsSkippedAndItsOwnerServes() {
    try (TestCluster cluster = new TestCluster()) {
      Job job = Job.of(cluster, 8);
      Map<String, byte[]> peers = new LinkedHashMap<>(cluster.peerMetadata());
      // The replicas' peers cannot be reached: no endpoint to connect to.
      peers.remove("r0");
      peers.remove("r1");
      Map<String, Object> m = refit(cluster, job.owners(), job.replicas(), peers);
      assertEquals(Map.of("t0", 32L, "t1", 32L), m.get("bytes_by_session"));
    }
  }

  @Test
  void aReplicaWhoseBytesDifferFromItsOwnersFailsTheStepNamingBoth() {
    try (TestCluster cluster = new TestCluster()) {
      Job job = Job.of(cluster, 9);
      ReplicaMismatchException e =
          assertThrows(
              ReplicaMismatchException.class,
              () -> refit(cluster, job.owners(), job.replicas(), cluster.peerMetadata()));
      assertEquals("t1", e.owner());
      assertEquals("r1", e.replica());
      assertTrue(e.getMessage().contains("'w' at offset [2, 0]"), e.getMessage());
    }
  }
}
