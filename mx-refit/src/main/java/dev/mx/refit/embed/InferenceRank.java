package dev.mx.refit.embed;

import dev.mx.api.annotation.Stable;
import dev.mx.api.digest.DigestProvider;
import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.refit.GeometrySource;
import dev.mx.api.refit.Installer;
import dev.mx.api.refit.WirePolicy;
import dev.mx.api.transport.MemoryKind;
import dev.mx.api.transport.MemoryRegistration;
import dev.mx.api.transport.Transport;
import dev.mx.api.util.Closeables;
import dev.mx.metadata.Discovery;
import dev.mx.refit.KernelWarmup;
import dev.mx.refit.LiveWeights;
import dev.mx.refit.Receiver;
import dev.mx.refit.ReceiverConfig;
import dev.mx.refit.SourceDiscovery;
import dev.mx.refit.checkpoint.CheckpointInstall;
import dev.mx.refit.checkpoint.CheckpointSource;
import dev.mx.refit.fanout.InstalledPublisher;
import dev.mx.refit.fanout.RecordingGeometry;
import dev.mx.refit.stage.DeltaState;
import dev.mx.refit.version.VersionFollower;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One inference rank of a refit job, as every integrator writes it: a {@link Receiver} over the
 * engine's {@link LiveWeights}, fed by {@link StoreDiscovery#consistent consistent discovery} of
 * the trainer job it expects, or (with {@link Builder#followVersions}) by a {@link VersionFollower}
 * that waits for each step's weight version, leases it and checks its tables (docs/VERSIONS.md).
 *
 * <p>A step is {@link #step refit} and verified first and made live only by {@link #commit}, which
 * the job's coordinator calls once every rank verified that step ({@link StepCoordinator}): copied
 * from the receive buffers into the live weights, or, in place (the receivers write the live
 * weights themselves, holding only a bounded staging reservation beside them), already live, so
 * that commit only lets the version before it go. After a failed step {@link #rollback} puts the
 * previous step back where the trainers' second buffer set still holds it, or says the weights are
 * torn.
 *
 * <p>With {@link Builder#serveInstalled} the rank also serves what it installed (fan-out): each
 * committed step, and a checkpoint it started from, goes out as a weight version of an identity of
 * its own ({@link InstalledPublisher}), which later receivers follow as they would a trainer job.
 *
 * <p>{@link Builder#warmUp} warms a cold JVM while the trainers write their first step: the
 * kernels, and a rehearsed refit the caller supplies ({@link Builder#rehearsal}), so the first real
 * refit runs at warm speed.
 */
@Stable
public final class InferenceRank implements StepCoordinator.Rank, AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(InferenceRank.class);

  private final Builder b;
  private final StagedInstall staged = new StagedInstall();

  /** What the live weights hold, shared by the receivers of both trainer buffer sets (deltas). */
  private final DeltaState liveHolds = new DeltaState();

  private Receiver receiver;
  private VersionFollower follower;
  private boolean closed;

  /** With {@link Builder#serveInstalled}: the geometry, remembering its capture to serve. */
  private final RecordingGeometry geometry;

  /** With {@link Builder#serveInstalled}: the publisher of the installed steps (from start). */
  private InstalledPublisher installed;

  private InferenceRank(Builder b) {
    this.b = b;
    this.geometry = new RecordingGeometry(b.geometry);
  }

  /** A rank reading {@code identity}'s trainers through {@code transport} and {@code store}. */
  public static Builder builder(Transport transport, MetadataStore store, String identity) {
    return new Builder(transport, store, identity);
  }

  /** {@code receiver N}, as errors and notes name this rank. */
  @Override
  public String name() {
    return "receiver " + b.rank;
  }

  /** The weights this rank serves. */
  public LiveWeights live() {
    return b.live;
  }

  /** Whether the receivers write the live weights in place. */
  public boolean inPlace() {
    return b.inPlace;
  }

  /**
   * Builds the receivers (and warms up, see {@link Builder#warmUp}); without versions also prepares
   * the plan. Returns {@code install} (versions) or the plan's {@code descriptors} and {@code
   * bytes_planned}.
   */
  public Map<String, Object> start() {
    if (b.warmUp) {
      // While the trainers write their first step: the first refit then runs at warm speed.
      KernelWarmup.inBackground(DigestProvider.registry().select());
      if (b.rehearsal != null) {
        rehearseInBackground(b.rehearsal);
      }
    }
    Map<String, Object> out = new LinkedHashMap<>();
    if (b.checkpoint != null) {
      out.put("checkpoint", installCheckpoint());
    }
    // In place the receivers write the live weights, registered once with the transport (and
    // served from that registration).
    MemoryRegistration liveMemory =
        b.followVersions && b.inPlace ? b.live.registerWith(b.transport) : null;
    if (b.servedIdentity != null) {
      TrainerRank.Builder job =
          TrainerRank.builder(b.transport, b.store, b.servedIdentity)
              .job(b.rank, b.servedWorldSize, b.servedTopology)
              .workerId(b.transport.localSession())
              .stallLimit(b.stallLimit);
      installed =
          new InstalledPublisher(
              job, b.live, liveMemory != null ? liveMemory : b.live.registerWith(b.transport));
      if (b.checkpoint != null) {
        // What the engine starts from is served at once: a later group starts from it too.
        out.put("served_checkpoint_s", geometry.serve(installed, b.checkpointStep));
      }
    }
    if (b.followVersions) {
      // Restoring a torn step needs the trainers' second buffer set.
      boolean restore = b.inPlace && b.trainerSets == 2;
      out.put("install", b.inPlace ? "in-place" : "copy");
      VersionFollower.Builder f =
          VersionFollower.builder(b.store, b.identity)
              .holder(b.holder != null ? b.holder : "receiver-" + b.rank)
              // The publishers must be the trainer job this rank expects.
              .expect(b.expected)
              // A failed step fails the job (fail closed): no second try of the same version.
              .maxAttempts(1)
              .pollInterval(Duration.ofMillis(20))
              .installer(b.inPlace ? b.live : staged)
              // Reconnects a restarted trainer; a killed one's memory is read for a restore where
              // it outlives it (shm).
              .transport(b.transport)
              .restorePrevious(restore)
              .holdUntilCommit(restore)
              // One receiver per trainer buffer set, each used every other step: its receive
              // buffers are free again (committed) by the time it runs next.
              .receivers(
                  (discovery, installer) ->
                      newReceiver(discovery, installer, false, b.inPlace ? b.live : null));
      if (b.stallLimit != null) {
        // Waits for a version last while the trainer ranks progress; a stalled one fails the step.
        f.stallLimit(b.stallLimit);
      }
      follower = f.build();
      return out;
    }
    StoreDiscovery discovery =
        StoreDiscovery.consistent(b.store, b.identity, b.expected).named(name());
    if (b.freshness != null) {
      discovery = discovery.withFreshness(b.freshness);
    }
    receiver = newReceiver(discovery, staged, true, null);
    receiver.prepare();
    out.put("descriptors", receiver.plan().descriptorCount());
    out.put("bytes_planned", receiver.plan().bytesPlanned());
    return out;
  }

  /**
   * Installs the builder's checkpoint into the live weights (through the commit installer, as a
   * committed step). Returns its step, bytes, files, the bytes read and verified shards, and its
   * time.
   */
  private Map<String, Object> installCheckpoint() {
    // Into the weights themselves when nothing transforms them on the way: fresh receive buffers
    // as large as the weights would cost their allocation, and nothing is live yet to protect.
    Map<String, Object> m =
        b.commitInstaller == b.live
            ? CheckpointInstall.installInPlace(
                b.checkpoint, b.checkpointStep, b.rank, geometry, b.live, b.config)
            : CheckpointInstall.install(
                b.checkpoint, b.checkpointStep, b.rank, geometry, b.commitInstaller, b.config);
    LOG.info(
        "{}: installed step {} from checkpoint {} in {} s",
        name(),
        b.checkpointStep,
        b.checkpoint.dir(),
        String.format(java.util.Locale.ROOT, "%.3f", (Double) m.get("checkpoint_s")));
    return CheckpointInstall.summary(b.checkpoint, m);
  }

  private Receiver newReceiver(
      SourceDiscovery discovery,
      Installer installer,
      boolean doubleBuffer,
      LiveWeights inPlaceTarget) {
    Receiver.Builder builder =
        Receiver.builder()
            .config(b.config.withRank(b.rank).withDoubleBuffer(doubleBuffer))
            .transport(b.transport)
            .discovery(discovery)
            .geometry(geometry)
            .installer(installer)
            .memory(b.memory)
            .inPlace(inPlaceTarget)
            .stagingBytes(b.stagingBytes)
            .rediscoverEachStep(true)
            .delta(b.delta)
            .deltaState(liveHolds);
    if (b.wirePolicy != null) {
      builder.wirePolicy(b.wirePolicy);
    }
    return builder.build();
  }

  /**
   * Refits {@code step} and stages it until {@link #commit}. With versions: waits (at most {@code
   * cap}) until its version is READY, then refits under a lease. {@code e2e_s} counts from when the
   * version was picked and leaves out the one-time preparation of a receiver ({@code prepare_*});
   * {@code wire_s} sums the wire stages.
   */
  public Map<String, Object> step(long step, Duration cap) {
    if (installed != null && b.inPlace) {
      // The refit writes the served weights: no reader may lease them any more.
      installed.beforeWrite();
    }
    long t0 = System.nanoTime();
    Map<String, Object> m;
    double notRefit = 0;
    if (follower != null) {
      VersionFollower.Followed f = follower.followStep(step, cap);
      m = new LinkedHashMap<>(f.metrics());
      notRefit = m.get("version_wait_s") instanceof Number n ? n.doubleValue() : 0;
      for (Map.Entry<String, Object> e : f.metrics().entrySet()) {
        if (e.getKey().startsWith("prepare_")
            && e.getKey().endsWith("_s")
            && e.getValue() instanceof Number n) {
          notRefit += n.doubleValue();
        }
      }
      m.put("version_step", f.step());
    } else {
      m = new LinkedHashMap<>(receiver.updateWeights(step));
      m.put("coverage", receiver.coverage().coverage());
    }
    double e2e = (System.nanoTime() - t0) / 1e9 - notRefit;
    m.put("wire_s", wireSeconds(m));
    m.put("e2e_s", e2e);
    return m;
  }

  /** The sum of a refit's {@code wire_*_s} stage times. */
  public static double wireSeconds(Map<String, Object> metrics) {
    double wire = 0;
    for (Map.Entry<String, Object> e : metrics.entrySet()) {
      if (e.getKey().startsWith("wire_")
          && e.getKey().endsWith("_s")
          && e.getValue() instanceof Number n) {
        wire += n.doubleValue();
      }
    }
    return wire;
  }

  /**
   * Makes {@code step} live once every rank verified it: copies the staged receive buffers through
   * the commit installer, or, in place, checks it is live and lets the version before it go.
   * Returns {@code step} and {@code install_s}.
   */
  @Override
  public Map<String, Object> commit(long step) {
    long t0 = System.nanoTime();
    if (b.inPlace) {
      if (b.live.lastStep() != step) {
        throw new IllegalStateException(
            "no verified weights of step " + step + " are live (last: " + b.live.lastStep() + ")");
      }
      follower.commit();
    } else {
      if (installed != null) {
        installed.beforeWrite();
      }
      staged.commitInto(b.commitInstaller, step);
    }
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("step", step);
    m.put("install_s", (System.nanoTime() - t0) / 1e9);
    if (installed != null) {
      m.put("serve_s", geometry.serve(installed, step));
    }
    return m;
  }

  /** The publisher of the installed steps ({@link Builder#serveInstalled}), or null. */
  public InstalledPublisher installedPublisher() {
    return installed;
  }

  /**
   * After a failed step: a rank that installed it in place puts back step {@code to}, read again
   * from the trainers' other buffer set and verified. Returns the {@code step} now live, with
   * {@code torn} (the step that tore them) for torn weights or {@code rollback_s} when it restored.
   */
  @Override
  public Map<String, Object> rollback(long to) {
    LiveWeights live = b.live;
    if (live.isTorn()) {
      return Map.of("step", live.lastStep(), "torn", live.tornStep());
    }
    if (!b.inPlace || b.trainerSets == 1 || live.lastStep() == to) {
      // Nothing to put back, or (one trainer set) nothing held to put back from.
      return Map.of("step", live.lastStep());
    }
    long t0 = System.nanoTime();
    long step = follower.rollback();
    return Map.of("step", step, "rollback_s", (System.nanoTime() - t0) / 1e9);
  }

  /**
   * Closes the follower (and the receivers it made) or the receiver; the live weights, transport
   * and store stay the caller's.
   */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    List<AutoCloseable> order = new ArrayList<>();
    // Readers of the installed weights are told first (STALE), before anything is torn down.
    order.add(installed);
    order.add(follower);
    order.add(receiver);
    Closeables.closeAll(order);
  }

  /**
   * Runs {@code rehearsal} on a daemon thread named {@code mx-refit-rehearsal}: a cold JVM loads
   * and compiles the refit path during its first refit, several times slower than the next;
   * rehearsed while the trainers write their first step, the first real refit finds it ready. A
   * failed rehearsal only logs.
   */
  public static Thread rehearseInBackground(Runnable rehearsal) {
    return Thread.ofPlatform()
        .daemon()
        .name("mx-refit-rehearsal")
        .start(
            () -> {
              long start = System.nanoTime();
              try {
                rehearsal.run();
                LOG.debug("refit rehearsed in {} ms", (System.nanoTime() - start) / 1_000_000);
              } catch (RuntimeException e) {
                LOG.warn(
                    "refit rehearsal failed (the first refit will be slower): {}", e.toString());
              }
            });
  }

  /**
   * Keeps a verified step's receive buffers until {@link #commit} copies them into the live
   * weights. They stay valid until then: a plain receiver double buffers; a follower runs its next
   * refit only after the commit and keeps one receiver per trainer buffer set.
   */
  private static final class StagedInstall implements Installer {
    private long step = -1;
    private Map<String, MemorySegment> buffers;

    @Override
    public synchronized void install(long s, Map<String, MemorySegment> receiveBuffers) {
      step = s;
      buffers = receiveBuffers;
    }

    synchronized void commitInto(Installer live, long s) {
      if (buffers == null || step != s) {
        throw new IllegalStateException(
            "no verified weights of step " + s + " are staged (last staged: " + step + ")");
      }
      live.install(s, buffers);
      buffers = null;
    }
  }

  /** What an inference rank reads, how, and into what. */
  public static final class Builder {
    private final Transport transport;
    private final MetadataStore store;
    private final String identity;
    private int rank;
    private LiveWeights live;
    private GeometrySource geometry;
    private Installer commitInstaller;
    private ReceiverConfig config = ReceiverConfig.defaults();
    private MemoryKind memory = MemoryKind.HOST;
    private long stagingBytes;
    private boolean delta = true;
    private Discovery.Expectation expected;
    private Duration freshness;
    private Duration stallLimit;
    private boolean followVersions;
    private boolean inPlace;
    private int trainerSets = 2;
    private boolean warmUp;
    private Runnable rehearsal;
    private WirePolicy wirePolicy;
    private CheckpointSource checkpoint;
    private long checkpointStep;
    private String holder;
    private String servedIdentity;
    private int servedWorldSize;
    private String servedTopology;

    private Builder(Transport transport, MetadataStore store, String identity) {
      this.transport = Objects.requireNonNull(transport, "transport");
      this.store = Objects.requireNonNull(store, "store");
      this.identity = Objects.requireNonNull(identity, "identity");
    }

    /** This rank's index among the inference ranks (its receiver's rank, its lease holder). */
    public Builder rank(int r) {
      this.rank = r;
      return this;
    }

    /**
     * Who holds this rank's leases on the versions it reads (default {@code receiver-<rank>}):
     * unique among the ranks reading one identity, e.g. when two inference groups read one job.
     */
    public Builder holder(String h) {
      this.holder = Objects.requireNonNull(h, "holder");
      return this;
    }

    /** The engine's weights: what a commit makes live, what in place is written. */
    public Builder live(LiveWeights l) {
      this.live = Objects.requireNonNull(l, "live");
      return this;
    }

    /** The receiver's target geometry (which slice of which tensor lands where). */
    public Builder geometry(GeometrySource g) {
      this.geometry = Objects.requireNonNull(g, "geometry");
      return this;
    }

    /**
     * How a committed copy step becomes live (default the live weights themselves; e.g. a
     * quantizing installer in front of them).
     */
    public Builder commitInstaller(Installer i) {
      this.commitInstaller = Objects.requireNonNull(i, "commitInstaller");
      return this;
    }

    /** The receivers' wire, verification, timeout and bounding; rank and buffering are set here. */
    public Builder config(ReceiverConfig c) {
      this.config = Objects.requireNonNull(c, "config");
      return this;
    }

    /** Where receive buffers and staging live (default host). */
    public Builder memory(MemoryKind kind) {
      this.memory = Objects.requireNonNull(kind, "memory");
      return this;
    }

    /** The staging reservation beside live weights written in place; 0 for the default. */
    public Builder stagingBytes(long bytes) {
      this.stagingBytes = bytes;
      return this;
    }

    /** Whether a step reads only the shards that changed since the weights' step (default on). */
    public Builder delta(boolean on) {
      this.delta = on;
      return this;
    }

    /** The trainer job the publishers must form: its world size and declared topology. */
    public Builder expect(Discovery.Expectation e) {
      this.expected = Objects.requireNonNull(e, "expected");
      return this;
    }

    /** Without versions: a publisher counts if it heartbeat READY within {@code f}. */
    public Builder freshness(Duration f) {
      this.freshness = f;
      return this;
    }

    /** With versions: how long a trainer rank may make no progress before its step fails. */
    public Builder stallLimit(Duration d) {
      this.stallLimit = d;
      return this;
    }

    /** Follow weight versions (default: discover the publishers' current tables). */
    public Builder followVersions(boolean on) {
      this.followVersions = on;
      return this;
    }

    /**
     * With versions: the receivers write the live weights in place (host memory, installs that
     * write exactly the bytes pulled).
     */
    public Builder inPlace(boolean on) {
      this.inPlace = on;
      return this;
    }

    /** How many buffer sets each trainer rank keeps (2: a torn in-place step can be restored). */
    public Builder trainerBufferSets(int sets) {
      if (sets < 1 || sets > 2) {
        throw new IllegalArgumentException("trainer buffer sets must be 1 or 2, got " + sets);
      }
      this.trainerSets = sets;
      return this;
    }

    /** Whether {@link InferenceRank#start} warms the kernels in the background (default off). */
    public Builder warmUp(boolean on) {
      this.warmUp = on;
      return this;
    }

    /**
     * A refit rehearsed in the background while warming up ({@link #rehearseInBackground}): one
     * that shares nothing with the real refit (its own transport, store and memory); null for none.
     */
    public Builder rehearsal(Runnable r) {
      this.rehearsal = r;
      return this;
    }

    /**
     * The wire policy of this rank's receivers (a decorator of the configured one, say); null, the
     * default, takes the one the config names.
     */
    public Builder wirePolicy(WirePolicy w) {
      this.wirePolicy = w;
      return this;
    }

    /**
     * A checkpoint whose weights {@link InferenceRank#start} installs as step {@code step} before
     * the rank follows the trainers ({@link CheckpointInstall}): the engine serves from it at once
     * and reads its first live step from the trainers. Host memory only. The checkpoint stays the
     * caller's to close.
     */
    public Builder checkpoint(CheckpointSource c, long step) {
      if (step < 0) {
        throw new IllegalArgumentException("a checkpoint's step must be >= 0, got " + step);
      }
      this.checkpoint = Objects.requireNonNull(c, "checkpoint");
      this.checkpointStep = step;
      return this;
    }

    /**
     * Serve what this rank installs (fan-out): each committed step, and the checkpoint it starts
     * from, as weight versions of {@code identity}, this rank being slot {@link #rank} of an
     * inference group of {@code groupSize} ranks that declares {@code topology}. Receivers follow
     * {@code identity} expecting that group, as they would a trainer job. The rank must install
     * exactly what it reads (no transforming commit installer).
     */
    public Builder serveInstalled(String identity, int groupSize, String topology) {
      if (identity.equals(this.identity)) {
        throw new IllegalArgumentException(
            "an inference rank serves its installed weights under another identity than the one"
                + " it reads ('"
                + identity
                + "')");
      }
      this.servedIdentity = identity;
      this.servedWorldSize = groupSize;
      this.servedTopology = Objects.requireNonNull(topology, "topology");
      return this;
    }

    public InferenceRank build() {
      Objects.requireNonNull(live, "live weights");
      Objects.requireNonNull(geometry, "geometry");
      Objects.requireNonNull(expected, "expected trainer job");
      if (inPlace && !followVersions) {
        throw new IllegalArgumentException("in-place installs need weight versions");
      }
      if (checkpoint != null && memory.isDevice()) {
        throw new IllegalArgumentException(
            "a checkpoint installs into host memory; this rank's weights are in " + memory);
      }
      if (commitInstaller == null) {
        commitInstaller = live;
      }
      if (servedIdentity != null && commitInstaller != live) {
        throw new IllegalArgumentException(
            "receiver "
                + rank
                + " cannot serve its installed weights as '"
                + servedIdentity
                + "': its commit installer transforms what it installs (e.g. quantizes), so the"
                + " weights are not the bytes its geometry describes");
      }
      if (servedIdentity != null && (rank < 0 || rank >= servedWorldSize)) {
        throw new IllegalArgumentException(
            "receiver " + rank + " is outside its serving group of " + servedWorldSize + " ranks");
      }
      return new InferenceRank(this);
    }
  }
}
