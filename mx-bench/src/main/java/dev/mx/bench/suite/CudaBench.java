package dev.mx.bench.suite;

import dev.mx.api.DType;
import dev.mx.api.error.MxException;
import dev.mx.api.transport.MemoryKind;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.cli.bench.BenchOptions;
import dev.mx.cli.bench.BenchResult;
import dev.mx.cli.bench.Benchmark;
import dev.mx.cuda.Cuda;
import dev.mx.cuda.CudaCasts;
import dev.mx.cuda.CudaDevice;
import dev.mx.cuda.CudaDigest;
import dev.mx.cuda.CudaMemory;
import dev.mx.cuda.DeviceAllocation;
import dev.mx.transport.cudaipc.CudaIpcTransportProvider;
import dev.mx.transport.testsuite.tool.PublisherProcess;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * mx-cuda on device 0 against a device-to-device copy of the same bytes ({@code cuMemcpyAsync}),
 * all measured in this run, interleaved: the shard digest (goal ratio ≥ 0.8), casts f32→bf16,
 * bf16→f32 and f32→f8_e4m3fn (goal ≥ 0.5; GB/s of source bytes), and cuda-ipc reads from a
 * publisher in a child JVM (64 MiB descriptors). {@code MX_CUDA_BENCH_MIB} sets the buffer size
 * (default 1024).
 */
public final class CudaBench implements Benchmark {
  private static final long MIB = 1024 * 1024;

  @Override
  public String name() {
    return "cuda";
  }

  @Override
  public String description() {
    return "device digest, casts and cuda-ipc reads vs a device-to-device copy of the same bytes (needs a GPU)";
  }

  @Override
  public List<BenchResult> run(BenchOptions options) throws Exception {
    if (!Cuda.isAvailable()) {
      throw new MxException("cuda bench: CUDA is unavailable: " + Cuda.unavailabilityCause());
    }
    long bytes = Long.parseLong(System.getenv().getOrDefault("MX_CUDA_BENCH_MIB", "1024")) * MIB;
    options
        .progress()
        .println("cuda bench: " + Cuda.describe() + "; " + bytes / MIB + " MiB buffers");
    CudaDevice device = CudaDevice.get(0);
    List<BenchResult> results = new ArrayList<>();
    try (DeviceAllocation src = DeviceAllocation.allocate(0, bytes);
        DeviceAllocation dst = DeviceAllocation.allocate(0, bytes)) {
      long s = src.segment().address();
      long d = dst.segment().address();
      CudaMemory.fill(device, s, bytes, (byte) 0x3C); // finite in every dtype
      Measure.Action copy =
          () -> {
            CudaMemory.copyAsync(device, d, s, bytes);
            device.synchronize();
          };
      int reps = options.repetitions();
      double[] digest =
          Measure.interleavedMedians(2, reps, () -> CudaDigest.digest(0, s, bytes), copy);
      results.add(rate("cuda_digest_GBps", bytes, digest[0], bytes, digest[1]));
      record Cast(DType from, DType to) {}
      for (Cast c :
          List.of(
              new Cast(DType.F32, DType.BF16),
              new Cast(DType.BF16, DType.F32),
              new Cast(DType.F32, DType.F8_E4M3FN))) {
        long count = bytes / Math.max(c.from().elementSize(), c.to().elementSize());
        long srcBytes = count * c.from().elementSize();
        double[] m =
            Measure.interleavedMedians(
                2,
                reps,
                () ->
                    CudaCasts.convert(
                        0,
                        s,
                        c.from().elementSize(),
                        c.from(),
                        d,
                        c.to().elementSize(),
                        c.to(),
                        count),
                () -> {
                  CudaMemory.copyAsync(device, d, s, srcBytes);
                  device.synchronize();
                });
        results.add(
            rate(
                "cuda_cast_" + c.from().shortName() + "_to_" + c.to().shortName() + "_GBps",
                srcBytes,
                m[0],
                srcBytes,
                m[1]));
      }
      results.add(ipc(options, device, dst, bytes, copy, reps));
    }
    return results;
  }

  private static BenchResult rate(
      String metric, long bytes, double seconds, long baselineBytes, double baselineSeconds) {
    return new BenchResult(
        metric,
        bytes / seconds / 1e9,
        "GB/s",
        "cuda_memcpy_d2d_GBps",
        baselineBytes / baselineSeconds / 1e9);
  }

  /** cuda-ipc from a publisher in a child JVM, in 64 MiB descriptors, against the same copy. */
  private static BenchResult ipc(
      BenchOptions options,
      CudaDevice device,
      DeviceAllocation dst,
      long bytes,
      Measure.Action copy,
      int reps)
      throws Exception {
    try (PublisherProcess child =
            PublisherProcess.launch("cuda-ipc", "bench-publisher")
                .regions(List.of(bytes))
                .memory(MemoryKind.device(device.ordinal()))
                .start(Duration.ofMinutes(2));
        Transport receiver =
            new CudaIpcTransportProvider()
                .create(TransportConfig.of("bench-receiver").withTimeout(Duration.ofMinutes(2)))) {
      receiver.connect("bench-publisher", child.metadata());
      receiver.register(dst.segment());
      long remote = child.regions().getFirst().base();
      List<ReadDescriptor> batch = new ArrayList<>();
      for (long off = 0; off < bytes; off += 64 * MIB) {
        batch.add(
            new ReadDescriptor(
                "bench-publisher",
                remote + off,
                dst.segment().address() + off,
                Math.min(64 * MIB, bytes - off)));
      }
      options
          .progress()
          .println(
              "cuda bench: cuda-ipc from a child JVM, " + batch.size() + " descriptors of 64 MiB");
      double[] m = Measure.interleavedMedians(2, reps, () -> receiver.read(batch), copy);
      return new BenchResult(
          "cuda_ipc_read_64MiB_GBps",
          bytes / m[0] / 1e9,
          "GB/s",
          "cuda_memcpy_d2d_GBps",
          bytes / m[1] / 1e9);
    }
  }
}
