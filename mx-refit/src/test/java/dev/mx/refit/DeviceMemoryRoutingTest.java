package dev.mx.refit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.error.DigestMismatchException;
import dev.mx.api.error.NoProviderException;
import dev.mx.api.error.TransportException;
import dev.mx.api.memory.MemoryOps;
import dev.mx.api.memory.MemoryOpsProvider;
import dev.mx.api.metadata.ShardTable;
import dev.mx.api.transport.MemoryKind;
import dev.mx.api.transport.MemoryRegistration;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.digest.ShardDigest;
import dev.mx.metadata.memory.MemoryMetadataStore;
import dev.mx.refit.memory.HostMemoryOps;
import dev.mx.refit.publish.Publisher;
import dev.mx.transport.mem.MemTransportProvider;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Which memory operations each stage uses. A receiver whose memory is a device kind allocates its
 * buffers and staging with that kind's {@link MemoryOps}, registers them under the kind, and runs
 * re-slice, casts, staged copies and digests through those operations; a host receiver never
 * touches them; a transport that cannot read device memory refuses the registration naming itself
 * and the kind. The device here is the named test double {@link HostBackedDeviceOps} (host memory
 * claiming {@code cuda:N}), so this runs without a GPU; the same refit on a real GPU is {@code
 * mx-cuda}'s {@code CudaDeviceRefitTest}.
 */
class DeviceMemoryRoutingTest {

  /** The seed refit on host memory: the reference every device-routed run must equal. */
  private static Map<String, byte[]> hostReference() {
    try (Harness h = new Harness();
        Receiver r = h.builder(Map.of()).build()) {
      r.updateWeights(1);
      return h.installer.last;
    }
  }

  @Test
  void deviceKindBuffersRunEveryLocalStageOnTheDeviceOpsAndEqualTheHostReference() {
    Map<String, byte[]> reference = hostReference();
    HostBackedDeviceOps ops = new HostBackedDeviceOps(MemoryKind.device(0));
    try (Harness h = new Harness()) {
      h.cluster.receiver.readsDevice = true;
      try (Receiver r = h.builder(Map.of()).memoryOps(ops).build()) {
        assertEquals(MemoryKind.device(0), r.memory());
        Map<String, Object> m = r.updateWeights(1);
        assertEquals(reference.keySet(), h.installer.last.keySet());
        reference.forEach((k, v) -> assertArrayEquals(v, h.installer.last.get(k), k));
        // Every receive buffer and staging slab came from the device ops and was registered as
        // cuda:0.
        assertTrue(ops.count("allocate") >= 1, "buffers allocated by the device ops");
        assertEquals(Set.of(MemoryKind.device(0)), Set.copyOf(h.cluster.receiver.registeredKinds));
        for (MemorySegment b : h.installer.handed.getLast().values()) {
          assertTrue(ops.owns(b), "receive buffer in device memory");
        }
        // strided: one re-slice launch; router: one bf16 -> f32 cast; three shards digested on the
        // device.
        assertEquals(1, ops.count("viewCopy"), "re-slice of the full pull on the device");
        assertEquals(1, ops.count("cast"), "the convert on the device");
        assertEquals(3L, ((Number) m.get("verified_shards")).longValue());
        assertEquals(3, ops.count("digest"), "every verified shard digested by the device ops");
      }
    }
  }

  /**
   * A planned refit through real publishers and the real planner: the column half of two row-split
   * f32 tensors, one as bf16 (convert staging, then a cast) and one as f32 (the planner stages or
   * full-pulls the partly read shards, then copies out of staging). On device memory the digests,
   * the copies out of staging and the cast all run on the device ops, and the result equals the
   * host run.
   */
  @Test
  void shardStagingAndCastsOfAPlannedRefitRunOnTheDeviceOps() {
    Map<String, byte[]> host = plannedRefit(null, dev.mx.api.plan.BoundingMode.SHARD);
    HostBackedDeviceOps ops = new HostBackedDeviceOps(MemoryKind.device(0));
    Map<String, byte[]> device = plannedRefit(ops, dev.mx.api.plan.BoundingMode.SHARD);
    assertEquals(host.keySet(), device.keySet());
    host.forEach((k, v) -> assertArrayEquals(v, device.get(k), k));
    assertEquals(64 * 48 * 2, host.get("w_cols").length);
    assertEquals(64 * 48 * 4, host.get("v_cols").length);
    assertEquals(4, ops.count("digest"), "all four shards digested on the device: " + ops.calls);
    assertTrue(
        ops.count("copy") + ops.count("viewCopy") >= 1,
        "v's columns copied out of staging on the device: " + ops.calls);
    assertTrue(ops.count("cast") >= 1, "the f32 -> bf16 cast ran on the device: " + ops.calls);
  }

  /**
   * ModelExpress bounding reads each shard's columns exactly, so verification stages the partly
   * read shards whole: each staged shard is digested in device staging, then copied out by the
   * device ops.
   */
  @Test
  void stagedShardsAreDigestedAndCopiedOutOnTheDeviceOps() {
    Map<String, byte[]> host = plannedRefit(null, dev.mx.api.plan.BoundingMode.MODELEXPRESS);
    HostBackedDeviceOps ops = new HostBackedDeviceOps(MemoryKind.device(0));
    Map<String, byte[]> device = plannedRefit(ops, dev.mx.api.plan.BoundingMode.MODELEXPRESS);
    assertEquals(host.keySet(), device.keySet());
    host.forEach((k, v) -> assertArrayEquals(v, device.get(k), k));
    assertEquals(
        4, ops.count("digest"), "every staged shard digested in device staging: " + ops.calls);
    assertTrue(
        ops.count("copy") + ops.count("viewCopy") >= 2,
        "both staged shards of v copied out on the device: " + ops.calls);
    assertEquals(
        4,
        ops.count("copyAll"),
        "each staged shard's runs in one batched device copy: " + ops.calls);
  }

  private static Map<String, byte[]> plannedRefit(
      HostBackedDeviceOps ops, dev.mx.api.plan.BoundingMode bounding) {
    Shape shape = Shape.of(64, 96);
    try (Arena arena = Arena.ofShared();
        MemoryMetadataStore store =
            new MemoryMetadataStore("planned-" + java.util.UUID.randomUUID());
        Transport t0 = new MemTransportProvider().create(TransportConfig.of("t0"));
        Transport t1 = new MemTransportProvider().create(TransportConfig.of("t1"));
        RecordingTransport rt =
            new RecordingTransport(new MemTransportProvider().create(TransportConfig.of("r")))) {
      rt.readsDevice = ops != null;
      MemorySegment w = arena.allocate(shape.numel() * 4, 64);
      MemorySegment v = arena.allocate(shape.numel() * 4, 64);
      for (int i = 0; i < shape.numel(); i++) {
        w.setAtIndex(ValueLayout.JAVA_FLOAT, i, (i % 977) / 8f - 60);
        v.setAtIndex(ValueLayout.JAVA_FLOAT, i, (i % 613) / 4f - 70);
      }
      List<Publisher> publishers = new java.util.ArrayList<>();
      try {
        Transport[] ts = {t0, t1};
        for (int rank = 0; rank < 2; rank++) {
          MemorySegment shard = arena.allocate(w.byteSize() / 2, 64);
          MemorySegment.copy(w, rank * shard.byteSize(), shard, 0, shard.byteSize());
          MemorySegment vShard = arena.allocate(v.byteSize() / 2, 64);
          MemorySegment.copy(v, rank * vShard.byteSize(), vShard, 0, vShard.byteSize());
          publishers.add(
              Publisher.builder(ts[rank], store)
                  .identity("planned")
                  .workerId("t" + rank)
                  .rank(rank)
                  .tensor(
                      "w", DType.F32, shape, new long[] {rank * 32L, 0}, Shape.of(32, 96), shard)
                  .tensor(
                      "v", DType.F32, shape, new long[] {rank * 32L, 0}, Shape.of(32, 96), vShard)
                  .start());
        }
        RecordingInstaller installer = new RecordingInstaller(null);
        Receiver.Builder b =
            Receiver.builder()
                .transport(rt)
                .config(ReceiverConfig.defaults().withBounding(bounding))
                .discovery(dev.mx.refit.embed.StoreDiscovery.of(store, "planned", 2))
                .geometry(
                    dev.mx.refit.embed.TargetGeometry.builder()
                        .shard(
                            "w_cols",
                            "w",
                            dev.mx.refit.embed.TpShard.of(shape, 1, 0, 2),
                            DType.BF16)
                        .shard(
                            "v_cols", "v", dev.mx.refit.embed.TpShard.of(shape, 1, 0, 2), DType.F32)
                        .build())
                .installer(installer);
        if (ops != null) {
          b.memoryOps(ops);
        }
        try (Receiver r = b.build()) {
          Map<String, Object> m = r.updateWeights(0);
          assertEquals(4, ((Number) m.get("verified_shards")).intValue(), m.toString());
        }
        return installer.last;
      } finally {
        dev.mx.api.util.Closeables.closeAll(new java.util.ArrayList<>(publishers).reversed());
      }
    }
  }

  @Test
  void hostKindBuffersNeverTouchDeviceOps() {
    long before =
        HostBackedDeviceOpsProvider.CUDA0.calls.values().stream().mapToLong(a -> a.sum()).sum();
    try (Harness h = new Harness();
        Receiver r = h.builder(Map.of()).build()) {
      assertEquals(MemoryKind.HOST, r.memory());
      r.updateWeights(1);
      assertEquals(Set.of(MemoryKind.HOST), Set.copyOf(h.cluster.receiver.registeredKinds));
    }
    long after =
        HostBackedDeviceOpsProvider.CUDA0.calls.values().stream().mapToLong(a -> a.sum()).sum();
    assertEquals(before, after, "a host receiver uses no device operation");
  }

  @Test
  void aDeviceKindIsLookedUpThroughTheServiceLoader() {
    HostBackedDeviceOps ops = HostBackedDeviceOpsProvider.CUDA1;
    long digests = ops.count("digest");
    try (Harness h = new Harness()) {
      h.cluster.receiver.readsDevice = true;
      try (Receiver r = h.builder(Map.of()).memory(MemoryKind.device(1)).build()) {
        r.updateWeights(1);
        assertEquals(Set.of(MemoryKind.device(1)), Set.copyOf(h.cluster.receiver.registeredKinds));
      }
    }
    assertEquals(
        digests + 3,
        ops.count("digest"),
        "the provider's cuda:1 operations digested the three shards");
    assertTrue(
        MemoryOpsProvider.forKind(MemoryKind.HOST, new HostMemoryOps()) instanceof HostMemoryOps,
        "host memory keeps the host default");
    NoProviderException none =
        assertThrows(
            NoProviderException.class,
            () -> MemoryOpsProvider.forKind(MemoryKind.device(3), new HostMemoryOps()));
    assertTrue(none.getMessage().contains("cuda:3"), none.getMessage());
  }

  @Test
  void aDeviceBufferGivenToAHostOnlyTransportFailsNamingTheTransportAndTheKind() {
    HostBackedDeviceOps ops = new HostBackedDeviceOps(MemoryKind.device(0));
    try (Harness h = new Harness();
        Receiver r = h.builder(Map.of()).memoryOps(ops).build()) {
      // readsDevice stays false: the mem transport underneath reads host memory only.
      TransportException e = assertThrows(TransportException.class, () -> r.updateWeights(1));
      assertTrue(
          e.getMessage().contains("mem transport cannot register cuda:0 memory"), e.getMessage());
      assertTrue(h.installer.steps.isEmpty(), "nothing installed");
    }
    try (Transport mem = new MemTransportProvider().create(TransportConfig.of("m"));
        Arena a = Arena.ofConfined()) {
      assertFalse(mem.supportsMemory(MemoryKind.device(2)));
      assertTrue(mem.supportsMemory(MemoryKind.HOST));
      TransportException e =
          assertThrows(
              TransportException.class, () -> mem.register(a.allocate(64), MemoryKind.device(2)));
      assertTrue(
          e.getMessage().contains("mem transport cannot register cuda:2 memory"), e.getMessage());
      try (MemoryRegistration host = mem.register(a.allocate(64), MemoryKind.HOST)) {
        assertEquals(64, host.length());
      }
    }
  }

  @Test
  void aCorruptedDeviceByteFailsVerificationNamingTheShard() {
    HostBackedDeviceOps ops = new HostBackedDeviceOps(MemoryKind.device(0));
    try (Harness h = new Harness()) {
      h.cluster.receiver.readsDevice = true;
      DiscoveredSources published = h.seed.discovered(h.cluster);
      // The publisher's bytes change after its digest went out.
      h.seed.stridedSrc.setAtIndex(ValueLayout.JAVA_FLOAT, 5, -1f);
      try (Receiver r =
          h.builder(Map.of()).memoryOps(ops).discovery(SourceDiscovery.fixed(published)).build()) {
        DigestMismatchException e =
            assertThrows(DigestMismatchException.class, () -> r.updateWeights(1));
        assertTrue(e.getMessage().contains("strided"), e.getMessage());
        assertTrue(e.getMessage().contains("s1"), e.getMessage());
        assertTrue(h.installer.steps.isEmpty(), "nothing installed");
        assertTrue(ops.count("digest") >= 1, "the mismatch was found by the device digest");
      }
    }
  }

  @Test
  void aPublisherOfDeviceBuffersDigestsThemWithTheDeviceOps() {
    HostBackedDeviceOps ops = new HostBackedDeviceOps(MemoryKind.device(0));
    try (Transport t = new MemTransportProvider().create(TransportConfig.of("p0"));
        MemoryMetadataStore store = new MemoryMetadataStore("device-publisher-test");
        MemoryRegistration device = ops.allocate(4096)) {
      float[] values = TestCluster.arange(0, 1024);
      MemorySegment host = MemorySegment.ofArray(values);
      ops.copyFromHost(host, 0, device.segment(), 0, 4096);
      long before = ops.count("digest");
      // The caller registered its device memory (a transport reading device memory would take
      // cuda:0; the
      // mem transport is given the host memory the double really is).
      try (MemoryRegistration reg = t.register(device.segment());
          Publisher p =
              Publisher.builder(t, store)
                  .identity("dev")
                  .workerId("w0")
                  .rank(0)
                  .buffer(MemoryRegistration.ofKind(reg, MemoryKind.device(0)))
                  .memoryOps(ops)
                  .alias(
                      "w",
                      DType.F32,
                      Shape.of(1024),
                      new long[] {0},
                      Shape.of(1024),
                      device.segment(),
                      0)
                  .start()) {
        ShardTable table = p.table();
        String published = table.tensors().getFirst().shards().getFirst().digest();
        assertEquals(
            ShardDigest.digest(MemorySegment.ofArray(values)),
            published,
            "device digest of the device buffer equals the CPU digest of the same bytes");
        assertTrue(ops.count("digest") > before, "digested through the device ops");
      }
    }
  }
}
