package dev.mx.refit.checkpoint;

import dev.mx.api.annotation.Experimental;
import dev.mx.api.refit.GeometrySource;
import dev.mx.api.refit.Installer;
import dev.mx.api.transport.MemoryKind;
import dev.mx.api.transport.MemoryRegistration;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.api.transport.TransportProvider;
import dev.mx.api.util.Closeables;
import dev.mx.refit.LiveWeights;
import dev.mx.refit.Receiver;
import dev.mx.refit.ReceiverConfig;
import dev.mx.refit.SourceDiscovery;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Installs a {@link CheckpointSource} into an engine's weights: a receiver of its own, over a mem
 * transport that reads the checkpoint's mappings in this process, plans from the checkpoint's whole
 * tensors to the engine's geometry (its tensor-parallel slices, fused QKV and gate-up, casts),
 * verifies every byte against the checkpoint's digests and hands the buffers to the installer, as a
 * refit from trainers would. A failure installs nothing; a file that changed while it was read
 * fails naming it. The receiver and transport are closed before this returns: the engine then
 * follows live versions with its own receivers.
 */
@Experimental
public final class CheckpointInstall {
  /** The transport that reads the mappings: a copy in this process. */
  static final String TRANSPORT = "mem";

  private CheckpointInstall() {}

  /**
   * Refits {@code step} from {@code checkpoint} into receive buffers of its own and hands them to
   * {@code installer} (a copy install: for installers that transform what they install, such as a
   * quantizing engine), as receiver {@code rank} with {@code config}'s verification, bounding and
   * timeout. Returns the receiver's metrics with {@code checkpoint_bytes} (the checkpoint's size),
   * {@code checkpoint_files}, {@code checkpoint_step} and {@code checkpoint_s} (the whole install).
   *
   * @throws CheckpointException when a file changed since it was mapped (before or during the
   *     read), naming it; nothing was installed
   */
  public static Map<String, Object> install(
      CheckpointSource checkpoint,
      long step,
      int rank,
      GeometrySource geometry,
      Installer installer,
      ReceiverConfig config) {
    return run(checkpoint, step, rank, geometry, Objects.requireNonNull(installer), null, config);
  }

  /**
   * As {@link #install}, writing the host weights {@code live} in place: no receive buffers are
   * allocated (the engine's weights are the landing buffers), only staging for tensors the plan
   * pulls whole. Meant for an engine that serves nothing yet: a failure after the first write
   * leaves {@code live} torn ({@link LiveWeights#isTorn}).
   */
  public static Map<String, Object> installInPlace(
      CheckpointSource checkpoint,
      long step,
      int rank,
      GeometrySource geometry,
      LiveWeights live,
      ReceiverConfig config) {
    if (live.memory().isDevice()) {
      throw new IllegalArgumentException(
          "a checkpoint installs in place into host memory, not " + live.memory());
    }
    return run(checkpoint, step, rank, geometry, live, live, config);
  }

  private static Map<String, Object> run(
      CheckpointSource checkpoint,
      long step,
      int rank,
      GeometrySource geometry,
      Installer installer,
      LiveWeights inPlace,
      ReceiverConfig config) {
    Objects.requireNonNull(checkpoint, "checkpoint");
    long t0 = System.nanoTime();
    checkpoint.requireUnchanged();
    List<AutoCloseable> order = new ArrayList<>();
    Transport transport =
        TransportProvider.registry()
            .select(TRANSPORT)
            .create(new TransportConfig("checkpoint-reader-" + rank, config.timeout(), Map.of()));
    MemoryRegistration live = null;
    try {
      if (inPlace != null) {
        live = inPlace.registerWith(transport);
      }
      Receiver receiver =
          Receiver.builder()
              .config(config.withRank(rank).withDoubleBuffer(false))
              .transport(transport)
              .discovery(SourceDiscovery.fixed(checkpoint.sources(transport)))
              .geometry(geometry)
              .installer(installer)
              .inPlace(inPlace)
              .memory(MemoryKind.HOST)
              .delta(false)
              .build();
      order.add(receiver);
      Map<String, Object> m;
      try {
        m = new LinkedHashMap<>(receiver.updateWeights(step));
      } catch (RuntimeException | InternalError e) {
        // A fault on a truncated mapping, or a digest mismatch of a file rewritten meanwhile: name
        // the file when one changed.
        throw checkpoint.changedOr(e);
      }
      m.put("checkpoint_step", step);
      m.put("checkpoint_bytes", checkpoint.byteSize());
      m.put("checkpoint_files", checkpoint.files().size());
      m.put("checkpoint_in_place", inPlace != null);
      m.put("checkpoint_s", (System.nanoTime() - t0) / 1e9);
      return m;
    } finally {
      if (live != null) {
        MemoryRegistration registered = live;
        order.add(() -> inPlace.release(registered));
      }
      order.add(transport);
      Closeables.closeAll(order);
    }
  }

  /**
   * What an install of {@code checkpoint} reports, from {@link #install}'s metrics: {@code dir},
   * {@code step}, {@code files}, {@code checkpoint_bytes}, {@code bytes_read}, {@code
   * verified_shards} and {@code install_s}.
   */
  public static Map<String, Object> summary(
      CheckpointSource checkpoint, Map<String, Object> metrics) {
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("dir", checkpoint.dir().toString());
    out.put("step", metrics.get("checkpoint_step"));
    out.put("files", metrics.get("checkpoint_files"));
    out.put("checkpoint_bytes", metrics.get("checkpoint_bytes"));
    out.put("bytes_read", metrics.get("bytes_received"));
    out.put("verified_shards", metrics.get("verified_shards"));
    out.put("in_place", metrics.get("checkpoint_in_place"));
    out.put("install_s", metrics.get("checkpoint_s"));
    return out;
  }
}
