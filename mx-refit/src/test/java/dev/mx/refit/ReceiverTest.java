package dev.mx.refit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.error.ImpossibleThroughputException;
import dev.mx.api.error.IncompleteRefitException;
import dev.mx.api.error.TransportException;
import dev.mx.api.error.UnsupportedReshardException;
import dev.mx.api.plan.CaptureResult;
import dev.mx.api.plan.OpSpec;
import dev.mx.api.plan.RecordedCopy;
import dev.mx.api.plan.TransferPlan;
import dev.mx.api.refit.Capture;
import dev.mx.api.refit.Installer;
import dev.mx.api.refit.WirePolicy;
import dev.mx.refit.wire.FusedWire;
import dev.mx.refit.wire.PhasedWire;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * Receiver behaviour beyond the seed: ModelExpress (ARCHITECTURE §7.9) descriptor cache, batch
 * install, ceiling, stage record, atomicity.
 */
class ReceiverTest {

  // ------------------------------------------------------------ descriptor cache

  @Test
  void cachedAndUncachedDescriptorsGiveIdenticalBuffers() {
    Map<String, byte[]> cached;
    Map<String, byte[]> uncached;
    try (Harness h = new Harness();
        Receiver r = h.builder(Map.of()).build()) {
      r.updateWeights(1);
      r.updateWeights(2);
      assertEquals(1, r.descriptorBuilds(), "second step reuses the cached descriptors");
      cached = h.installer.last;
    }
    try (Harness h = new Harness();
        Receiver r = h.builder(Map.of("MX_RESHARD_CACHE_DESCRIPTORS", "0")).build()) {
      r.updateWeights(1);
      Map<String, Object> m = r.updateWeights(2);
      assertEquals(2, r.descriptorBuilds(), "without the cache every step builds");
      assertTrue(m.containsKey("descriptor_build_s"));
      uncached = h.installer.last;
    }
    assertEquals(cached.keySet(), uncached.keySet());
    cached.forEach((k, v) -> assertArrayEquals(v, uncached.get(k), k));
  }

  @Test
  void switchingThePolicyKeepsTheCacheAndInvalidateDropsIt() {
    AtomicReference<WirePolicy> policy = new AtomicReference<>(new FusedWire());
    AtomicInteger plans = new AtomicInteger();
    try (Harness h = new Harness();
        Receiver r =
            h.builder(Map.of("MX_REFIT_PIPELINE", "0"))
                .wirePolicy(policy::get)
                .planner(
                    (c, s, max) -> {
                      plans.incrementAndGet();
                      return h.seed.plan;
                    })
                .build()) {
      r.updateWeights(1);
      r.updateWeights(2);
      assertEquals(1, r.descriptorBuilds());
      policy.set(new PhasedWire());
      Map<String, Object> phased = r.updateWeights(3);
      assertEquals(1, r.descriptorBuilds(), "the descriptors do not depend on the policy");
      assertTrue(phased.containsKey("wire_exact_s"));
      assertFalse(phased.containsKey("wire_fused_s"));
      assertEquals(List.of(3, 3, 1, 1, 1), h.cluster.receiver.batchSizes);
      r.invalidate();
      Map<String, Object> again = r.updateWeights(4);
      assertEquals(2, r.descriptorBuilds(), "a new plan drops the cache");
      assertEquals(2, plans.get(), "invalidate re-plans");
      assertTrue(again.containsKey("prepare_plan_s"), "a re-prepare reports its setup stages");
      assertArrayEquals(TestCluster.arange(0, 8), h.installer.floats("exact"));
    }
  }

  @Test
  void publisherUpdatesInPlaceReachTheNextStep() {
    try (Harness h = new Harness();
        Receiver r =
            h.builder(Map.of())
                .discovery(t -> h.seed.discovered(h.cluster))
                .rediscoverEachStep(true)
                .build()) {
      r.updateWeights(1);
      h.seed.exactSrc.setAtIndex(ValueLayout.JAVA_FLOAT, 3, -7f);
      h.seed.stridedSrc.setAtIndex(ValueLayout.JAVA_FLOAT, 4, 42f); // row 1, column 0
      r.updateWeights(2);
      assertEquals(-7f, h.installer.floats("exact")[3]);
      assertEquals(42f, h.installer.floats("strided")[2]);
      assertEquals(List.of(1L, 2L), h.installer.steps);
    }
  }

  // ------------------------------------------------------------ batch install

  @Test
  void overlappingCopiesFailTheElementCoverageGateBeforeAnyRead() {
    try (Harness h = new Harness()) {
      // Two copies of the staged 4x4 source into one 4x2 parameter: columns 0-1, then columns 2-3
      // into the
      // same place. Every element of 'strided' would be written twice: the gate refuses the plan.
      RecordedCopy first =
          new RecordedCopy(
              "strided",
              List.of(OpSpec.narrow(1, 0, 2)),
              "strided",
              0,
              Shape.of(4, 2),
              new long[] {2, 1},
              DType.F32);
      RecordedCopy second =
          new RecordedCopy(
              "strided",
              List.of(OpSpec.narrow(1, 2, 2)),
              "strided",
              0,
              Shape.of(4, 2),
              new long[] {2, 1},
              DType.F32);
      TransferPlan plan = withFullPullCopies(h.seed.plan, List.of(first, second));
      Capture capture =
          new Capture(
              new CaptureResult(
                  List.of(
                      h.seed.capture.result().copies().get(0),
                      first,
                      second,
                      h.seed.capture.result().copies().get(2)),
                  List.of(),
                  0,
                  Map.of()),
              h.seed.capture.paramLayout());
      try (Receiver r =
          h.builder(Map.of()).planner((c, s, m) -> plan).geometry(m -> capture).build()) {
        IncompleteRefitException e =
            assertThrows(IncompleteRefitException.class, () -> r.updateWeights(1));
        assertTrue(
            e.getMessage().contains("param strided") && e.getMessage().contains("written 2 times"),
            e.getMessage());
        assertEquals(List.of("strided"), e.missing());
        assertTrue(h.cluster.receiver.batchSizes.isEmpty(), "nothing was read");
        assertTrue(h.installer.order.isEmpty(), "nothing was installed");
      }
    }
  }

  @Test
  void emptyFullPullListIsANoOp() {
    try (Harness h = new Harness(false);
        Receiver r = h.builder(Map.of()).build()) {
      Map<String, Object> m = r.updateWeights(1);
      assertFalse(m.containsKey("reslice_s"));
      assertFalse(m.containsKey("reslice_copies"));
      assertFalse(m.containsKey("convert_s"));
    }
  }

  private static TransferPlan withFullPullCopies(TransferPlan p, List<RecordedCopy> copies) {
    var f = p.fullPulls().get(0);
    return new TransferPlan(
        p.segments(),
        p.fallback(),
        p.converts(),
        List.of(
            new dev.mx.api.plan.FullPullSource(
                f.srcName(), f.globalShape(), f.dtype(), f.elsize(), f.segments(), copies)),
        p.unboundedSources(),
        p.exactDescriptorCount(),
        p.exactBytes(),
        p.fallbackReasons());
  }

  @Test
  void thePipelinedWireReadsOnePeerAtATimeAndVerifiesEachAsItLands() {
    try (Harness h = new Harness();
        Receiver r = h.builder(Map.of()).config(ReceiverConfig.defaults().withThreads(2)).build()) {
      Map<String, Object> m = r.updateWeights(1);
      // Three peers (s0 exact, s1 full pull, s2 convert), one batch each, their digests overlapping
      // the rest.
      assertEquals(List.of(1, 1, 1), h.cluster.receiver.batchSizes);
      assertEquals(3L, m.get("verified_shards"));
      assertTrue(m.containsKey("pipeline_drain_s"), m.toString());
      assertArrayEquals(TestCluster.arange(0, 8), h.installer.floats("exact"));
      assertArrayEquals(
          new float[] {100, 101, 104, 105, 108, 109, 112, 113}, h.installer.floats("strided"));
    }
    try (Harness h = new Harness();
        Receiver r =
            h.builder(Map.of("MX_REFIT_PIPELINE", "0"))
                .config(ReceiverConfig.defaults().withThreads(2))
                .build()) {
      Map<String, Object> m = r.updateWeights(1);
      assertEquals(
          List.of(3),
          h.cluster.receiver.batchSizes,
          "switched off: one fused batch, work after it");
      assertTrue(m.containsKey("verify_s"), m.toString());
    }
  }

  // ------------------------------------------------------------ ceiling and atomicity

  @Test
  void impossibleThroughputFailsTheRefitBeforeInstallAndTheNextStepSucceeds() {
    String key = ReceiverSetting.MAX_GBPS.property();
    System.setProperty(key, "1e-12");
    try (Harness h = new Harness();
        Receiver r =
            h.builder(dev.mx.api.util.Settings.system())
                .config(ReceiverConfig.defaults().withRank(3))
                .build()) {
      ImpossibleThroughputException e =
          assertThrows(ImpossibleThroughputException.class, () -> r.updateWeights(7));
      assertEquals(3, e.rank());
      assertEquals(7, e.step());
      assertTrue(e.getMessage().contains("rank 3"), e.getMessage());
      assertTrue(h.installer.order.isEmpty(), "install is never reached");
      var rec = h.records.tagged(ThroughputCeiling.TAG);
      assertEquals(1, rec.size());
      assertEquals(RefitRecords.Level.WARNING, rec.get(0).level());
      assertEquals(3, rec.get(0).record().get("rank"));
      assertEquals(7L, rec.get(0).record().get("step"));
      assertEquals(104L, rec.get(0).record().get("wire_bytes"));
      assertTrue(
          h.records.tagged(Receiver.STAGE_TAG).isEmpty(), "no stage record for a failed refit");

      // Concluded when built: clearing the setting does not change this receiver ...
      System.clearProperty(key);
      assertThrows(ImpossibleThroughputException.class, () -> r.updateWeights(8));
      assertTrue(h.installer.order.isEmpty(), "install is never reached");
      // ... the next receiver over the same publishers concludes without the ceiling and installs.
      try (Receiver next =
          h.builder(dev.mx.api.util.Settings.system())
              .config(ReceiverConfig.defaults().withRank(3))
              .build()) {
        Map<String, Object> m = next.updateWeights(8);
        assertEquals(List.of("install"), h.installer.order);
        assertEquals(8L, m.get("step"));
      }
    } finally {
      System.clearProperty(key);
    }
  }

  @Test
  void failedWireInstallsNothingAndTheNextStepSucceeds() {
    try (Harness h = new Harness();
        LiveWeights live = new LiveWeights(h.seed.capture.paramLayout())) {
      List<String> calls = new ArrayList<>();
      Installer both =
          (step, buffers) -> {
            calls.add("install " + step);
            live.install(step, buffers);
          };
      // Publishers change bytes in place and republish digests: discovery reads them fresh every
      // step.
      try (Receiver r =
          h.builder(Map.of())
              .installer(both)
              .discovery(t -> h.seed.discovered(h.cluster))
              .rediscoverEachStep(true)
              .build()) {
        r.updateWeights(1);
        byte[] before = live.parameter("exact").toArray(ValueLayout.JAVA_BYTE);
        h.seed.exactSrc.setAtIndex(ValueLayout.JAVA_FLOAT, 0, 99f);
        h.cluster.receiver.failNextReads(1);
        TransportException e = assertThrows(TransportException.class, () -> r.updateWeights(2));
        assertTrue(e.getMessage().contains("injected"), e.getMessage());
        assertArrayEquals(
            before,
            live.parameter("exact").toArray(ValueLayout.JAVA_BYTE),
            "live weights untouched");
        assertEquals(List.of("install 1"), calls);
        r.updateWeights(3);
        assertEquals(List.of("install 1", "install 3"), calls);
        assertEquals(99f, live.parameter("exact").getAtIndex(ValueLayout.JAVA_FLOAT, 0));
        assertEquals(3, live.lastStep());
      }
    }
  }

  @Test
  void doubleBufferingNeverWritesTheBuffersLastInstalled() {
    try (Harness h = new Harness();
        Receiver r =
            h.builder(Map.of())
                .config(ReceiverConfig.defaults().withDoubleBuffer(true))
                .discovery(t -> h.seed.discovered(h.cluster))
                .rediscoverEachStep(true)
                .build()) {
      r.updateWeights(1);
      MemorySegment firstExact = h.installer.handed.get(0).get("exact");
      byte[] firstBytes = firstExact.toArray(ValueLayout.JAVA_BYTE);
      h.seed.exactSrc.setAtIndex(ValueLayout.JAVA_FLOAT, 0, 50f);
      h.cluster.receiver.failNextReads(1);
      assertThrows(TransportException.class, () -> r.updateWeights(2));
      assertArrayEquals(
          firstBytes,
          firstExact.toArray(ValueLayout.JAVA_BYTE),
          "adopted buffers untouched by a failed refit");
      r.updateWeights(3);
      MemorySegment secondExact = h.installer.handed.get(1).get("exact");
      assertNotEquals(
          firstExact.address(), secondExact.address(), "the next refit fills the other set");
      assertEquals(50f, secondExact.getAtIndex(ValueLayout.JAVA_FLOAT, 0));
      assertArrayEquals(
          firstBytes,
          firstExact.toArray(ValueLayout.JAVA_BYTE),
          "and leaves the installed set alone");
      r.updateWeights(4);
      assertEquals(
          firstExact.address(), h.installer.handed.get(2).get("exact").address(), "sets alternate");
      assertEquals(2, r.descriptorBuilds(), "one descriptor build per set");
    }
  }

  // ------------------------------------------------------------ stage record and metrics

  @Test
  void stageRecordAndMetricsCarryTheStagesPrepareOnlyOnTheColdStep() {
    try (Harness h = new Harness();
        Receiver r = h.builder(Map.of()).config(ReceiverConfig.defaults().withRank(2)).build()) {
      Map<String, Object> cold = r.updateWeights(1);
      Map<String, Object> warm = r.updateWeights(2);
      for (String k :
          List.of(
              "prepare_discover_s",
              "prepare_capture_s",
              "prepare_plan_s",
              "prepare_handshake_s",
              "prepare_alloc_s",
              "prepare_register_s")) {
        assertTrue(cold.containsKey(k), k);
        assertFalse(warm.containsKey(k), k);
      }
      for (String k :
          List.of(
              "step",
              "bytes_received",
              "segments",
              "converts",
              "full_pull_sources",
              "exact_descriptors",
              "descriptor_savings",
              "extra_wire_bytes",
              "unbounded_sources",
              "fallback",
              "verified_shards",
              "unverifiable_shards",
              "unverified_bytes",
              "staged_shards",
              "sources_exact",
              "sources_staged",
              "sources_full_pull",
              "verify",
              "descriptor_build_s",
              "wire_fused_s",
              "reslice_s",
              "reslice_copies",
              "convert_s",
              "install_s")) {
        assertTrue(warm.containsKey(k), k);
      }
      var records = h.records.tagged(Receiver.STAGE_TAG);
      assertEquals(2, records.size(), "one record per refit");
      Map<String, Object> rec = records.get(1).record();
      assertEquals(
          RefitRecords.Level.DEBUG,
          records.get(1).level(),
          "a library's log shows the per-step record only when asked");
      assertEquals("refit-stage-v3", rec.get("schema"));
      assertEquals(2, rec.get("rank"));
      assertEquals(2L, rec.get("step"));
      assertEquals(104L, rec.get("bytes"));
      assertEquals(3L, rec.get("segments"));
      assertEquals(true, rec.get("fused_wire"));
      assertEquals(1L, rec.get("exact_descriptors"));
      assertEquals(1L, rec.get("full_pull_sources"));
      assertEquals(1L, rec.get("converts"));
      assertEquals(0L, rec.get("fallback"));
      assertFalse(rec.containsKey("wire_exact_s"), "a phase that did not run is absent");
      double sum = 0;
      for (var e : rec.entrySet()) {
        if (e.getKey().endsWith("_s") && !e.getKey().equals("accounted_s")) {
          sum += (Double) e.getValue();
          assertEquals(e.getValue(), warm.get(e.getKey()), "metrics carry " + e.getKey());
        }
      }
      assertEquals(sum, (Double) rec.get("accounted_s"), 1e-5);
      // The first record holds the setup stages.
      assertTrue(records.get(0).record().containsKey("prepare_plan_s"));
    }
  }

  @Test
  void stageRecordLevelIsInfoOnRequestAndAnyOtherValueFailsNamingTheSetting() {
    try (Harness h = new Harness();
        Receiver r = h.builder(Map.of("MX_REFIT_STAGE_RECORD_LEVEL", "INFO")).build()) {
      r.updateWeights(1);
      assertEquals(RefitRecords.Level.INFO, h.records.tagged(Receiver.STAGE_TAG).get(0).level());
    }
    try (Harness h = new Harness()) {
      IllegalArgumentException e =
          assertThrows(
              IllegalArgumentException.class,
              () -> h.builder(Map.of("MX_REFIT_STAGE_RECORD_LEVEL", "loud")).build());
      assertTrue(e.getMessage().contains("MX_REFIT_STAGE_RECORD_LEVEL"), e.getMessage());
      assertTrue(e.getMessage().contains("'loud'"), e.getMessage());
    }
  }

  @Test
  void stageRecordCanBeDisabledAndPhasedOnlyExactTimesOnePhase() {
    try (Harness h = new Harness(false);
        Receiver r =
            h.builder(Map.of("MX_REFIT_STAGE_RECORD", "off", "MX_RESHARD_FUSED_WIRE", "0"))
                .build()) {
      Map<String, Object> m = r.updateWeights(1);
      assertTrue(h.records.tagged(Receiver.STAGE_TAG).isEmpty());
      assertTrue(m.containsKey("wire_exact_s"));
      assertFalse(m.containsKey("wire_full_s"));
      assertFalse(m.containsKey("wire_convert_s"));
    }
  }

  // ------------------------------------------------------------ prepare gates

  @Test
  void fallbackFailsClosedAfterTheCoverageRecordAndBeforeAnyRead() {
    try (Harness h = new Harness()) {
      TransferPlan p = h.seed.plan;
      TransferPlan withFallback =
          new TransferPlan(
              p.segments(),
              List.of("strided", "router"),
              p.converts(),
              p.fullPulls(),
              p.unboundedSources(),
              p.exactDescriptorCount(),
              p.exactBytes(),
              Map.of(
                  "strided",
                  "unsupported op 'foo' on lazy 'strided' (chain=[foo()])",
                  "router",
                  "unsupported op 'foo' on lazy 'router' (chain=[foo()])"));
      try (Receiver r = h.builder(Map.of()).planner((c, s, m) -> withFallback).build()) {
        UnsupportedReshardException e =
            assertThrows(UnsupportedReshardException.class, () -> r.updateWeights(1));
        assertTrue(e.getMessage().contains("2 x unsupported op 'foo'"), e.getMessage());
        assertTrue(e.getMessage().contains("[router, strided]"), e.getMessage());
        assertEquals(
            1, h.records.tagged(Coverage.TAG).size(), "coverage is recorded before the rejection");
        assertTrue(h.cluster.receiver.batchSizes.isEmpty(), "nothing was read");
        assertEquals(0, r.nativeBytes(), "nothing was allocated");
      }
    }
  }

  @Test
  void missingPeerMetadataNamesTheSession() {
    try (Harness h = new Harness();
        Receiver r =
            h.builder(Map.of())
                .discovery(SourceDiscovery.fixed(new DiscoveredSources(h.seed.sources, Map.of())))
                .build()) {
      TransportException e = assertThrows(TransportException.class, () -> r.updateWeights(1));
      assertTrue(e.getMessage().contains("s0"), e.getMessage());
      assertEquals("s0", e.peer());
    }
  }

  @Test
  void closeIsIdempotentAndReleasesEverything() {
    Harness h = new Harness();
    Receiver r = h.builder(Map.of()).build();
    r.updateWeights(1);
    assertTrue(r.nativeBytes() > 0);
    r.close();
    r.close();
    assertEquals(0, r.nativeBytes());
    assertThrows(IllegalStateException.class, () -> r.updateWeights(2));
    h.close();
  }

  @Test
  void buildingAReceiverDoesNoNativeWork() {
    Map<String, Integer> calls = new HashMap<>();
    try (Harness h = new Harness();
        Receiver r =
            h.builder(Map.of())
                .discovery(
                    t -> {
                      calls.merge("discover", 1, Integer::sum);
                      return h.seed.discovered(h.cluster);
                    })
                .build()) {
      assertEquals(0, r.nativeBytes());
      assertTrue(calls.isEmpty());
      r.prepare();
      r.prepare();
      assertEquals(Map.of("discover", 1), calls);
      assertNotSame(null, r.plan());
      assertSame(r.plan(), r.plan());
      assertTrue(h.cluster.receiver.batchSizes.isEmpty(), "prepare reads nothing");
    }
  }
}
