package dev.mx.refit.fanout;

import dev.mx.api.annotation.Experimental;
import dev.mx.api.metadata.WeightVersion;
import dev.mx.api.refit.Capture;
import dev.mx.api.refit.ManifestEntry;
import dev.mx.api.transport.MemoryRegistration;
import dev.mx.refit.LiveWeights;
import dev.mx.refit.embed.TrainerRank;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An inference rank serving its installed weights (fan-out): after each step it installed and
 * verified, its live weights go out as that step's weight version under an identity of their own,
 * one slot per rank of its inference group, exactly as a trainer with one buffer set publishes
 * (docs/VERSIONS.md). Later receivers follow that identity as they would a trainer job; they verify
 * what they read against digests of the installed bytes, and a delta reads only the shards whose
 * bytes changed.
 *
 * <p>The lease rules are a trainer's: before the engine writes its weights again ({@link
 * #beforeWrite}), the version they hold is released and the write waits until no reader leases it,
 * so a reader never sees a step being overwritten; a rank whose install failed (torn weights)
 * publishes nothing, so its last version stays released and readers wait for, or skip, that rank's
 * slot. The caller owns the transport, store and weights.
 */
@Experimental
public final class InstalledPublisher implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(InstalledPublisher.class);

  private final TrainerRank.Builder job;
  private final LiveWeights live;
  private final MemoryRegistration memory;
  private TrainerRank rank;
  private List<InstalledShards.Entry> shards;
  private boolean closed;

  /**
   * Serves {@code live}, registered as {@code memory} with the transport of {@code job}: a trainer
   * rank's builder naming the identity served, the rank in its inference group, the group's size
   * and declared layout ({@link TrainerRank.Builder#job}, e.g. {@code vllm tp=2}) and its waits.
   * This publisher adds the versions and the one buffer set, the weights, once it knows what they
   * hold (the first {@link #publish}). The registration stays the caller's.
   */
  public InstalledPublisher(TrainerRank.Builder job, LiveWeights live, MemoryRegistration memory) {
    this.job = Objects.requireNonNull(job, "job");
    this.live = Objects.requireNonNull(live, "live");
    this.memory = Objects.requireNonNull(memory, "memory");
  }

  /**
   * Call before the engine writes its weights (an in-place refit, a commit's copy): releases the
   * version they hold and waits until no reader leases it.
   */
  public synchronized void beforeWrite() {
    ensureOpen();
    if (rank != null) {
      rank.reclaim();
    }
  }

  /**
   * Publishes the weights as step {@code step}, the shards {@code capture} (made for {@code
   * manifest}) installed: the first call starts the rank's publisher, which digests them; later
   * calls digest them again. Returns the version as of this rank's slot landing.
   *
   * @throws dev.mx.api.error.UnsupportedReshardException naming a parameter whose installed bytes
   *     are no box of a source tensor (first call, nothing published)
   * @throws IllegalStateException when the weights are torn or hold another step
   */
  public synchronized WeightVersion publish(
      long step, Capture capture, List<ManifestEntry> manifest) {
    ensureOpen();
    if (live.isTorn() || live.lastStep() != step) {
      throw new IllegalStateException(
          "cannot serve step "
              + step
              + " of installed weights: they "
              + (live.isTorn()
                  ? "are torn (step " + live.tornStep() + " failed part-way)"
                  : "hold step " + live.lastStep()));
    }
    if (rank == null) {
      shards = InstalledShards.of(capture, manifest);
      rank = start(shards);
      LOG.info(
          "slot {} serves its installed weights: {} shard(s) of {} parameter(s)",
          rank.slot(),
          shards.size(),
          live.layout().size());
    }
    return rank.publish(step, set -> {});
  }

  /** The shards served (empty before the first publish). */
  public synchronized List<InstalledShards.Entry> shards() {
    return shards == null ? List.of() : shards;
  }

  private TrainerRank start(List<InstalledShards.Entry> entries) {
    MemorySegment slab = memory.segment();
    return job.versions(true)
        .bufferSet(
            p -> {
              p.buffer(memory);
              for (InstalledShards.Entry e : entries) {
                long paramOffset = live.parameter(e.param()).address() - slab.address();
                p.alias(
                    e.name(),
                    e.dtype(),
                    e.globalShape(),
                    e.shardOffset(),
                    e.shape(),
                    slab,
                    paramOffset + e.byteOffset());
              }
            })
        .start();
  }

  private void ensureOpen() {
    if (closed) {
      throw new IllegalStateException("installed publisher is closed");
    }
  }

  /** Marks this rank's slots STALE and withdraws its table (idempotent); the weights stay. */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    if (rank != null) {
      rank.close();
    }
  }
}
