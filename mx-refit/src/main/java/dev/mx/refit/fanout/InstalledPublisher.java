package dev.mx.refit.fanout;

import dev.mx.api.annotation.Experimental;
import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.WeightVersion;
import dev.mx.api.refit.Capture;
import dev.mx.api.refit.ManifestEntry;
import dev.mx.api.transport.MemoryRegistration;
import dev.mx.api.transport.Transport;
import dev.mx.refit.LiveWeights;
import dev.mx.refit.embed.TrainerRank;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
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

  private final Builder b;
  private TrainerRank rank;
  private List<InstalledShards.Entry> shards;
  private boolean closed;

  private InstalledPublisher(Builder b) {
    this.b = b;
  }

  /** A publisher of {@code live}'s installed steps as versions of {@code identity}. */
  public static Builder builder(
      Transport transport, MetadataStore store, String identity, LiveWeights live) {
    return new Builder(transport, store, identity, live);
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
    if (b.live.isTorn() || b.live.lastStep() != step) {
      throw new IllegalStateException(
          "rank "
              + b.rank
              + " cannot serve step "
              + step
              + " of '"
              + b.identity
              + "': its weights "
              + (b.live.isTorn()
                  ? "are torn (step " + b.live.tornStep() + " failed part-way)"
                  : "hold step " + b.live.lastStep()));
    }
    if (rank == null) {
      shards = InstalledShards.of(capture, manifest);
      rank = start(shards);
      LOG.info(
          "rank {} serves its installed weights as '{}': {} shard(s) of {} parameter(s)",
          b.rank,
          b.identity,
          shards.size(),
          b.live.layout().size());
    }
    return rank.publish(step, set -> {});
  }

  /** The shards served (empty before the first publish). */
  public synchronized List<InstalledShards.Entry> shards() {
    return shards == null ? List.of() : shards;
  }

  private TrainerRank start(List<InstalledShards.Entry> entries) {
    MemoryRegistration memory = b.registration;
    if (memory == null) {
      memory = b.live.registerWith(b.transport);
    }
    MemoryRegistration registered = memory;
    MemorySegment slab = registered.segment();
    TrainerRank.Builder t =
        TrainerRank.builder(b.transport, b.store, b.identity)
            .job(b.rank, b.worldSize, b.topology)
            .workerId(b.workerId != null ? b.workerId : b.transport.localSession())
            .versions(true)
            .shutdownHook(b.shutdownHook)
            .bufferSet(
                p -> {
                  p.buffer(registered);
                  for (InstalledShards.Entry e : entries) {
                    long paramOffset = b.live.parameter(e.param()).address() - slab.address();
                    p.alias(
                        e.name(),
                        e.dtype(),
                        e.globalShape(),
                        e.shardOffset(),
                        e.shape(),
                        slab,
                        paramOffset + e.byteOffset());
                  }
                });
    if (b.heartbeat != null) {
      t.heartbeatInterval(b.heartbeat);
    }
    if (b.leaseWait != null) {
      t.leaseWait(b.leaseWait);
    }
    if (b.stallLimit != null) {
      t.stallLimit(b.stallLimit);
    }
    return t.start();
  }

  private void ensureOpen() {
    if (closed) {
      throw new IllegalStateException("installed publisher of '" + b.identity + "' is closed");
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

  /** Who serves: the rank in its inference group, the group's size and declared layout. */
  public static final class Builder {
    private final Transport transport;
    private final MetadataStore store;
    private final String identity;
    private final LiveWeights live;
    private int rank;
    private int worldSize = 1;
    private String topology = "installed";
    private String workerId;
    private MemoryRegistration registration;
    private Duration heartbeat;
    private Duration leaseWait;
    private Duration stallLimit;
    private boolean shutdownHook = true;

    private Builder(Transport transport, MetadataStore store, String identity, LiveWeights live) {
      this.transport = Objects.requireNonNull(transport, "transport");
      this.store = Objects.requireNonNull(store, "store");
      this.identity = Objects.requireNonNull(identity, "identity");
      this.live = Objects.requireNonNull(live, "live");
    }

    /**
     * This rank among its group's {@code worldSize} ranks, and the layout the group declares (what
     * its readers expect, e.g. {@code vllm tp=2}).
     */
    public Builder job(int rank, int worldSize, String topology) {
      if (rank < 0 || rank >= worldSize) {
        throw new IllegalArgumentException(
            "inference rank " + rank + " is outside its group's " + worldSize + " ranks");
      }
      this.rank = rank;
      this.worldSize = worldSize;
      this.topology = Objects.requireNonNull(topology, "topology");
      return this;
    }

    /** The publisher's worker id (default: the transport's session). */
    public Builder workerId(String id) {
      this.workerId = Objects.requireNonNull(id, "workerId");
      return this;
    }

    /**
     * The live weights' registration with the transport, when the caller already made one (an
     * in-place receiver's); otherwise the first publish registers them.
     */
    public Builder registration(MemoryRegistration r) {
      this.registration = r;
      return this;
    }

    /** How often the publisher heartbeats (default: the settings'). */
    public Builder heartbeatInterval(Duration d) {
      this.heartbeat = d;
      return this;
    }

    /** An overall cap on {@link #beforeWrite}'s wait for readers (default none: liveness). */
    public Builder leaseWait(Duration d) {
      this.leaseWait = d;
      return this;
    }

    /** How long the other ranks of the group may make no progress. */
    public Builder stallLimit(Duration d) {
      this.stallLimit = d;
      return this;
    }

    /** Whether a JVM shutdown hook marks the slots STALE (default on). */
    public Builder shutdownHook(boolean on) {
      this.shutdownHook = on;
      return this;
    }

    public InstalledPublisher build() {
      return new InstalledPublisher(this);
    }
  }
}
