package dev.mx.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.error.DigestMismatchException;
import dev.mx.api.refit.Installer;
import dev.mx.api.transport.MemoryKind;
import dev.mx.api.transport.MemoryRegistration;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.api.util.Closeables;
import dev.mx.metadata.memory.MemoryMetadataStore;
import dev.mx.refit.Receiver;
import dev.mx.refit.ReceiverConfig;
import dev.mx.refit.cast.Casts;
import dev.mx.refit.embed.StoreDiscovery;
import dev.mx.refit.embed.TargetGeometry;
import dev.mx.refit.embed.TpShard;
import dev.mx.refit.publish.Publisher;
import dev.mx.transport.cudaipc.CudaIpcTransportProvider;
import dev.mx.transport.mem.MemTransportProvider;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * A device-resident refit: two trainer publishers whose shards live in GPU memory (digested on the
 * GPU) and a receiver whose buffers and staging live on the GPU, over cuda-ipc. The receiver wants
 * the column half of a row-split f32 tensor as bf16 (partial reads of each shard: shard staging,
 * then a device cast) and a bf16 tensor whole (an exact read). The installed bytes must equal those
 * of the same refit in host memory (mem transport, CPU re-slice, casts and digest); a byte
 * corrupted in a publisher's device memory after its digest went out must fail verification naming
 * the tensor and the publisher. Skips without CUDA.
 */
class CudaDeviceRefitTest {
  private static final Shape W = Shape.of(64, 96);
  private static final Shape U = Shape.of(40, 72);
  private static final MemoryKind CUDA0 = MemoryKind.device(0);

  /** What one refit installed, by parameter, and its metrics. */
  private record Outcome(Map<String, byte[]> installed, Map<String, Object> metrics) {}

  private static float value(String name, long i) {
    long h = (i + 1) * 0x9E3779B97F4A7C15L ^ name.hashCode();
    return ((h >>> 40) % 2001 - 1000) / 64f;
  }

  /** The global tensor {@code name} in {@code dtype}, row-major, in host memory. */
  private static MemorySegment global(Arena arena, String name, Shape shape, DType dtype) {
    long n = shape.numel();
    MemorySegment s = arena.allocate(n * dtype.elementSize(), 64);
    for (long i = 0; i < n; i++) {
      long bits =
          Casts.convertBits(
              Float.floatToRawIntBits(value(name, i)) & 0xFFFF_FFFFL, DType.F32, dtype);
      if (dtype.elementSize() == 4) {
        s.setAtIndex(ValueLayout.JAVA_INT, i, (int) bits);
      } else {
        s.setAtIndex(ValueLayout.JAVA_SHORT, i, (short) bits);
      }
    }
    return s;
  }

  private static Transport transport(boolean device, String session) {
    TransportConfig c = TransportConfig.of(session);
    return device ? new CudaIpcTransportProvider().create(c) : new MemTransportProvider().create(c);
  }

  /**
   * Runs the refit with every region in device memory ({@code device}) or in host memory; {@code
   * corrupt} flips one byte of publisher t1's shard of {@code w} after it published.
   */
  private static Outcome refit(boolean device, boolean corrupt) {
    List<AutoCloseable> open = new ArrayList<>();
    try (Arena arena = Arena.ofShared()) {
      MemorySegment w = global(arena, "w", W, DType.F32);
      MemorySegment u = global(arena, "u", U, DType.BF16);
      MemoryMetadataStore store = new MemoryMetadataStore("cuda-refit-" + UUID.randomUUID());
      open.add(store);
      String identity = "device-refit";
      long half = w.byteSize() / 2;
      CudaMemoryOps ops = device ? new CudaMemoryOps(0) : null;
      MemorySegment t1Shard = null;
      for (int rank = 0; rank < 2; rank++) {
        Transport t = transport(device, "t" + rank);
        open.add(t);
        Publisher.Builder b =
            Publisher.builder(t, store)
                .identity(identity)
                .workerId("t" + rank)
                .rank(rank)
                .topology(2, "tp=2");
        MemorySegment hostShard = w.asSlice(rank * half, half);
        MemorySegment shard;
        MemorySegment uShard = null;
        if (device) {
          DeviceAllocation a = DeviceAllocation.allocate(0, half + (rank == 0 ? u.byteSize() : 0));
          open.add(a);
          a.copyFrom(hostShard, 0);
          if (rank == 0) {
            a.copyFrom(u, half);
          }
          MemoryRegistration reg = t.register(a.segment(), CUDA0);
          open.add(reg);
          assertEquals(CUDA0, reg.memoryKind());
          b.buffer(reg).deviceId(0);
          shard = a.segment().asSlice(0, half);
          uShard = rank == 0 ? a.segment().asSlice(half, u.byteSize()) : null;
        } else {
          MemorySegment copy = arena.allocate(half + (rank == 0 ? u.byteSize() : 0), 256);
          MemorySegment.copy(hostShard, 0, copy, 0, half);
          if (rank == 0) {
            MemorySegment.copy(u, 0, copy, half, u.byteSize());
          }
          b.buffer(copy);
          shard = copy.asSlice(0, half);
          uShard = rank == 0 ? copy.asSlice(half, u.byteSize()) : null;
        }
        b.alias("w", DType.F32, W, new long[] {rank * 32L, 0}, Shape.of(32, 96), shard, 0);
        if (uShard != null) {
          b.alias("u", DType.BF16, U, new long[] {0, 0}, U, uShard, 0);
        }
        open.add(b.start());
        if (rank == 1) {
          t1Shard = shard;
        }
      }
      if (corrupt) {
        MemorySegment one = arena.allocate(1);
        ops.copyToHost(t1Shard, 777, one, 0, 1);
        one.set(ValueLayout.JAVA_BYTE, 0, (byte) (one.get(ValueLayout.JAVA_BYTE, 0) ^ 0x40));
        ops.copyFromHost(one, 0, t1Shard, 777, 1);
      }
      TargetGeometry geometry =
          TargetGeometry.builder()
              .shard("w_cols", "w", TpShard.of(W, 1, 0, 2), DType.BF16)
              .whole("u", "u", U, DType.BF16)
              .build();
      Map<String, byte[]> installed = new LinkedHashMap<>();
      Installer snapshot =
          (step, buffers) ->
              buffers.forEach(
                  (name, seg) -> {
                    MemorySegment host = arena.allocate(Math.max(1, seg.byteSize()));
                    if (device) {
                      ops.copyToHost(seg, 0, host, 0, seg.byteSize());
                    } else {
                      MemorySegment.copy(seg, 0, host, 0, seg.byteSize());
                    }
                    installed.put(
                        name, host.asSlice(0, seg.byteSize()).toArray(ValueLayout.JAVA_BYTE));
                  });
      Transport rt = transport(device, "receiver");
      open.add(rt);
      try (Receiver r =
          Receiver.builder()
              .config(ReceiverConfig.defaults())
              .transport(rt)
              .discovery(StoreDiscovery.of(store, identity, 2))
              .geometry(geometry)
              .installer(snapshot)
              .memory(device ? CUDA0 : MemoryKind.HOST)
              .build()) {
        Map<String, Object> m = r.updateWeights(0);
        return new Outcome(installed, m);
      }
    } finally {
      Closeables.closeAll(new ArrayList<>(open).reversed());
    }
  }

  @Test
  void aDeviceResidentRefitEqualsTheHostReference() {
    CudaTestSupport.assumeCuda();
    Outcome host = refit(false, false);
    Outcome dev = refit(true, false);
    assertEquals(
        Map.of("w_cols", 64L * 48 * 2, "u", U.numel() * 2),
        Map.of(
            "w_cols",
            (long) host.installed().get("w_cols").length,
            "u",
            (long) host.installed().get("u").length));
    assertEquals(host.installed().keySet(), dev.installed().keySet());
    host.installed()
        .forEach((k, v) -> assertArrayEquals(v, dev.installed().get(k), "parameter " + k));
    assertEquals(host.metrics().get("verified_shards"), dev.metrics().get("verified_shards"));
    assertTrue(
        ((Number) dev.metrics().get("verified_shards")).intValue() >= 3, dev.metrics().toString());
    // Spot-check the host reference itself: w_cols[5][7] is w[5][7] rounded to bf16.
    long expected =
        Casts.convertBits(
            Float.floatToRawIntBits(value("w", 5 * 96 + 7)) & 0xFFFF_FFFFL, DType.F32, DType.BF16);
    short got =
        MemorySegment.ofArray(host.installed().get("w_cols"))
            .getAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, 5 * 48 + 7);
    assertEquals((short) expected, got);
  }

  @Test
  void aCorruptedDeviceByteFailsVerificationNamingTheShard() {
    CudaTestSupport.assumeCuda();
    DigestMismatchException e =
        assertThrows(DigestMismatchException.class, () -> refit(true, true));
    assertTrue(
        e.getMessage().contains("source 'w' at offset [32, 0] published by 't1'"), e.getMessage());
  }

  /**
   * The reference half runs anywhere: the scenario itself plans, stages, casts and verifies on the
   * CPU.
   */
  @Test
  void theHostReferenceRefitVerifiesEveryShardItReads() {
    Outcome host = refit(false, false);
    assertEquals(64L * 48 * 2, host.installed().get("w_cols").length);
    assertEquals(
        3, ((Number) host.metrics().get("verified_shards")).intValue(), host.metrics().toString());
    short got =
        MemorySegment.ofArray(host.installed().get("u"))
            .getAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, 100);
    assertEquals(
        (short)
            Casts.convertBits(
                Float.floatToRawIntBits(value("u", 100)) & 0xFFFF_FFFFL, DType.F32, DType.BF16),
        got);
  }
}
