package dev.mx.refit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.plan.CaptureResult;
import dev.mx.api.plan.OpSpec;
import dev.mx.api.plan.RecordedCopy;
import dev.mx.api.plan.Shard;
import dev.mx.api.plan.SourceInfo;
import dev.mx.api.plan.TransferPlan;
import dev.mx.api.refit.Capture;
import dev.mx.api.refit.ParamSpec;
import dev.mx.digest.ShardDigest;
import dev.mx.plan.ReshardPlanner;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The receiver with the real planner (mx-plan's ReshardPlanner) instead of a fixed plan. */
class RealPlannerTest {

  @Test
  void theRealPlannerBoundsTheSeedCaptureIntoTheSeedPlan() {
    try (Harness h = new Harness()) {
      Map<String, String> env = Map.of("MX_RESHARD_MAX_SEGMENTS_PER_COPY", "1");
      try (Receiver r =
          h.builder(env)
              .planner(new ReshardPlanner(dev.mx.api.util.Settings.of(Map.of(), env)))
              .build()) {
        Map<String, Object> m = r.updateWeights(1);
        TransferPlan plan = r.plan();
        assertEquals(h.seed.plan.segments(), plan.segments());
        assertEquals(h.seed.plan.fullPulls(), plan.fullPulls());
        assertEquals(h.seed.plan.converts(), plan.converts());
        assertEquals(3L, m.get("segments"));
        assertEquals(104L, m.get("bytes_received"));
        assertEquals(
            4L + 1 + 1,
            m.get("exact_descriptors"),
            "the exact baseline counts the four runs of the narrow");
        assertEquals(3L, m.get("descriptor_savings"));
        assertArrayEquals(
            new float[] {100, 101, 104, 105, 108, 109, 112, 113}, h.installer.floats("strided"));
      }
    }
  }

  /**
   * A TP2 trainer (rows split) feeding a receiver that keeps columns 0-1: exact reads cover no
   * shard whole.
   */
  @Test
  void tensorParallelReshardIsPartialUnderWholeShardsAndFullyVerifiedUnderStrict() {
    try (TestCluster cluster = new TestCluster()) {
      MemorySegment top = cluster.tensor("t0", DType.F32, TestCluster.arange(0, 8));
      MemorySegment bottom = cluster.tensor("t1", DType.F32, TestCluster.arange(8, 16));
      SourceInfo w =
          new SourceInfo(
              Shape.of(4, 4),
              DType.F32,
              List.of(
                  new Shard(
                      new long[] {0, 0},
                      Shape.of(2, 4),
                      "t0",
                      top.address(),
                      4,
                      ShardDigest.digest(top)),
                  new Shard(
                      new long[] {2, 0},
                      Shape.of(2, 4),
                      "t1",
                      bottom.address(),
                      4,
                      ShardDigest.digest(bottom))));
      RecordedCopy copy =
          new RecordedCopy(
              "w",
              List.of(OpSpec.narrow(1, 0, 2)),
              "p",
              0,
              Shape.of(4, 2),
              new long[] {2, 1},
              DType.F32);
      Capture capture =
          new Capture(
              CaptureResult.of(List.of(copy)),
              Map.of("p", new ParamSpec(Shape.of(4, 2), DType.F32)));
      for (VerifyMode mode :
          new VerifyMode[] {VerifyMode.WHOLE_SHARDS, VerifyMode.STRICT, VerifyMode.ALL}) {
        RecordingInstaller installer = new RecordingInstaller(null);
        try (Receiver r =
            Receiver.builder()
                // ModelExpress bounding keeps the tiny source exact, so whole-shards sees the
                // partial reads.
                .config(
                    ReceiverConfig.defaults()
                        .withVerify(mode)
                        .withBounding(dev.mx.api.plan.BoundingMode.MODELEXPRESS))
                .settings(dev.mx.api.util.Settings.of(Map.of(), Map.of()))
                .transport(cluster.receiver)
                .discovery(
                    SourceDiscovery.fixed(
                        new DiscoveredSources(Map.of("w", w), cluster.peerMetadata())))
                .geometry(m -> capture)
                .installer(installer)
                .records(new CapturingRecords())
                .build()) {
          Map<String, Object> m = r.updateWeights(1);
          assertArrayEquals(
              new float[] {0, 1, 4, 5, 8, 9, 12, 13}, installer.floats("p"), mode.label());
          if (mode == VerifyMode.STRICT) {
            assertEquals(
                1L, m.get("full_pull_sources"), "strict pulls the partly read source whole");
            assertEquals(2L, m.get("verified_shards"));
            assertEquals(0L, m.get("unverifiable_shards"));
          } else if (mode == VerifyMode.ALL) {
            assertEquals(
                2L, m.get("staged_shards"), "the default stages both partly read shards whole");
            assertEquals(2L, m.get("verified_shards"));
            assertEquals(0L, m.get("unverified_bytes"));
          } else {
            assertEquals(0L, m.get("full_pull_sources"));
            assertEquals(4L, m.get("segments"));
            assertEquals(32L, m.get("unverified_bytes"));
            assertEquals(0L, m.get("verified_shards"));
            assertEquals(2L, m.get("unverifiable_shards"));
          }
        }
      }
    }
  }
}
