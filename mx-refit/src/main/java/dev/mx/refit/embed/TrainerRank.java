package dev.mx.refit.embed;

import dev.mx.api.annotation.Stable;
import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.WeightVersion;
import dev.mx.api.transport.Transport;
import dev.mx.api.util.Closeables;
import dev.mx.refit.publish.ChangeLog;
import dev.mx.refit.publish.Publisher;
import dev.mx.refit.version.VersionedPublisher;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.Consumer;
import java.util.function.IntConsumer;
import java.util.stream.IntStream;

/**
 * One trainer rank of a refit job, as every integrator writes it: its buffer sets (each a {@link
 * Publisher.Builder} consumer adding the set's buffers and published shards), published either as
 * weight versions through a {@link VersionedPublisher} (docs/VERSIONS.md: each step is written into
 * the set that does not hold the newest version, once no receiver leases what it held, and lands as
 * this rank's slot of the step's version), or through one plain {@link Publisher} republished each
 * step. Both announce the trainer job (world size and declared topology) the receivers expect, and
 * share one {@link ChangeLog}, so a receiver reads only the shards a step changed.
 */
@Stable
public final class TrainerRank implements AutoCloseable {
  private final Builder b;
  private final ChangeLog changes = new ChangeLog();
  private VersionedPublisher versioned;
  private Publisher publisher;
  private boolean closed;

  private TrainerRank(Builder b) {
    this.b = b;
    if (b.versions) {
      VersionedPublisher.Builder v =
          VersionedPublisher.builder(b.transport, b.store)
              .model(b.identity)
              .slot(Integer.toString(b.rank))
              .expectedSlots(IntStream.range(0, b.worldSize).mapToObj(Integer::toString).toList())
              .workerId(b.workerId)
              .rank(b.rank)
              .configure(this::configure);
      if (b.leaseWait != null) {
        v.leaseWait(b.leaseWait);
      }
      if (b.stallLimit != null) {
        v.stallLimit(b.stallLimit);
      }
      v.shutdownHook(b.shutdownHook);
      b.sets.forEach(v::bufferSet);
      versioned = v.start();
    }
  }

  /** A rank publishing {@code identity} through {@code transport} into {@code store}. */
  public static Builder builder(Transport transport, MetadataStore store, String identity) {
    return new Builder(transport, store, identity);
  }

  /**
   * What both kinds of publisher announce beside their tables: the job, and how often they beat.
   */
  private void configure(Publisher.Builder p) {
    p.topology(b.worldSize, b.topology).changeLog(changes);
    if (b.heartbeat != null) {
      p.heartbeatInterval(b.heartbeat);
    }
  }

  /**
   * Publishes {@code step}: {@code writer} fills the buffer set it is given (with versions, the one
   * that does not hold the newest version, once no lease holds it; without, set 0), then the step
   * goes out. Returns the step's weight version, or null without versions.
   */
  public WeightVersion publish(long step, IntConsumer writer) {
    if (versioned != null) {
      return versioned.publish(step, writer);
    }
    writer.accept(0);
    if (publisher == null) {
      Publisher.Builder p =
          Publisher.builder(b.transport, b.store)
              .identity(b.identity)
              .step(step)
              .workerId(b.workerId)
              .rank(b.rank);
      configure(p);
      b.sets.get(0).accept(p);
      publisher = p.start();
    } else {
      publisher.republish(step);
    }
    return null;
  }

  /**
   * With versions, gets back the buffer set the next {@link #publish} writes ({@link
   * VersionedPublisher#reclaim}): for memory written before the publish by someone else, such as an
   * engine's installed weights. Returns that set; without versions, 0 at once.
   */
  public int reclaim() {
    return versioned != null ? versioned.reclaim() : 0;
  }

  /** This rank's slot of each version (its rank, as text). */
  public String slot() {
    return Integer.toString(b.rank);
  }

  /**
   * Stops publishing: a versioned publisher marks its slots STALE first. Buffers stay the caller's.
   */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    List<AutoCloseable> order = new ArrayList<>();
    order.add(versioned);
    order.add(publisher);
    Closeables.closeAll(order);
  }

  /** Who a trainer rank is and what it publishes. */
  public static final class Builder {
    private final Transport transport;
    private final MetadataStore store;
    private final String identity;
    private int rank;
    private int worldSize = 1;
    private String topology;
    private String workerId;
    private Duration heartbeat;
    private Duration leaseWait;
    private Duration stallLimit;
    private boolean versions;
    private boolean shutdownHook = true;
    private final List<Consumer<Publisher.Builder>> sets = new ArrayList<>();

    private Builder(Transport transport, MetadataStore store, String identity) {
      this.transport = Objects.requireNonNull(transport, "transport");
      this.store = Objects.requireNonNull(store, "store");
      this.identity = Objects.requireNonNull(identity, "identity");
    }

    /** This rank among the trainer job's {@code worldSize} ranks, and the job's declared layout. */
    public Builder job(int rank, int worldSize, String topology) {
      if (rank < 0 || rank >= worldSize) {
        throw new IllegalArgumentException(
            "trainer rank " + rank + " is outside the job's " + worldSize + " ranks");
      }
      this.rank = rank;
      this.worldSize = worldSize;
      this.topology = Objects.requireNonNull(topology, "topology");
      return this;
    }

    /** The publisher's worker id (its transport session). */
    public Builder workerId(String id) {
      this.workerId = Objects.requireNonNull(id, "workerId");
      return this;
    }

    /** How often the publishers heartbeat (default: the settings'). */
    public Builder heartbeatInterval(Duration d) {
      this.heartbeat = d;
      return this;
    }

    /** With versions: how long a publish waits for receivers' leases on a buffer set. */
    public Builder leaseWait(Duration d) {
      this.leaseWait = d;
      return this;
    }

    /** With versions: how long a receiver holding a lease may make no progress. */
    public Builder stallLimit(Duration d) {
      this.stallLimit = d;
      return this;
    }

    /** Publish weight versions (default: one plain publisher, republished each step). */
    public Builder versions(boolean on) {
      this.versions = on;
      return this;
    }

    /**
     * With versions: whether a JVM shutdown hook marks this rank's slots STALE (default on; off
     * where the caller closes the rank itself, e.g. tests).
     */
    public Builder shutdownHook(boolean on) {
      this.shutdownHook = on;
      return this;
    }

    /** Adds a buffer set: its buffers and published shards (two let versions overlap). */
    public Builder bufferSet(Consumer<Publisher.Builder> tensors) {
      sets.add(Objects.requireNonNull(tensors, "tensors"));
      return this;
    }

    /** Starts a versioned rank's publisher (a plain one starts with the first publish). */
    public TrainerRank start() {
      Objects.requireNonNull(topology, "job");
      Objects.requireNonNull(workerId, "workerId");
      if (sets.isEmpty()) {
        throw new IllegalArgumentException("a trainer rank needs at least one buffer set");
      }
      return new TrainerRank(this);
    }
  }
}
