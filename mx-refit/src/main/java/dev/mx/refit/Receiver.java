package dev.mx.refit;

import com.google.inject.AbstractModule;
import com.google.inject.CreationException;
import com.google.inject.Guice;
import com.google.inject.Module;
import com.google.inject.ProvisionException;
import com.google.inject.Stage;
import com.google.inject.multibindings.OptionalBinder;
import dev.mx.api.annotation.Stable;
import dev.mx.api.error.UnverifiableShardException;
import dev.mx.api.memory.MemoryOps;
import dev.mx.api.memory.MemoryOpsProvider;
import dev.mx.api.metrics.RefitListener;
import dev.mx.api.metrics.RefitListeners;
import dev.mx.api.plan.PlanBuilder;
import dev.mx.api.plan.SourceInfo;
import dev.mx.api.plan.TransferPlan;
import dev.mx.api.refit.GeometrySource;
import dev.mx.api.refit.InPlaceTarget;
import dev.mx.api.refit.Installer;
import dev.mx.api.refit.WirePolicy;
import dev.mx.api.transport.MemoryKind;
import dev.mx.api.transport.Transport;
import dev.mx.plan.ReshardPlanner;
import dev.mx.refit.guice.Receivers;
import dev.mx.refit.jfr.StageClock;
import dev.mx.refit.stage.RefitReport;
import dev.mx.refit.stage.ShardStaging;
import dev.mx.refit.stage.SourceChecks;
import dev.mx.refit.stage.StagedWork;
import dev.mx.refit.verify.ShardVerifier;
import dev.mx.refit.wire.WirePolicies;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The receiver side of a refit (ModelExpress; ARCHITECTURE §7.4), a short composition of stage
 * objects over a {@link ReceiverContext} concluded when it was built.
 *
 * <p>Prepare (first call, or after {@link #invalidate}): {@link Preparation} — discover, capture,
 * plan, gates, peers, buffers, local copies and verifiers — returns an immutable {@link
 * PreparedPlan}.
 *
 * <p>Every refit: {@link RefitStep} — descriptors (cached) → wire policy (pipelined with each
 * peer's verification and staged copies) → throughput ceiling → re-slice → casts → install →
 * report.
 *
 * <p>Atomicity: the {@link Installer} is called only after every step above succeeded. A failed
 * refit installs nothing, leaves the engine's live weights untouched, and leaves the receiver
 * usable for the next step. With {@link ReceiverConfig#doubleBuffer()} the receiver alternates
 * between two sets of receive buffers, so the set the engine was last given is never written by a
 * later refit until the next successful install — an installer may then adopt the buffers without
 * copying.
 *
 * <p>Memory: receive buffers and staging are host memory unless {@link Builder#memory} names a
 * device ({@code cuda:N}); then they are allocated, registered, re-sliced, cast, copied and
 * digested through that kind's {@link MemoryOps} (a {@link MemoryOpsProvider}), and the installer
 * is handed device memory.
 *
 * <p>The receiver does not own the transport, discovery, geometry source or installer; it owns its
 * native memory, registrations and worker threads, released by {@link #close()} (idempotent).
 */
@Stable
public final class Receiver implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(Receiver.class);

  /** Tag of the per-refit stage record. */
  public static final String STAGE_TAG = RefitReport.STAGE_TAG;

  public static final String STAGE_SCHEMA = RefitReport.STAGE_SCHEMA;

  private final ReceiverParts parts;
  private final ReceiverConfig config;
  private final RefitStep step;

  /**
   * Device operations for the receiver's memory (null for host memory), resolved at the first
   * prepare.
   */
  private MemoryOps device;

  private PreparedPlan prepared;
  private Long sourceStep;

  /** The publishers' tables of the step about to be read (prepare's, or the last rediscovery's). */
  private Map<String, SourceInfo> currentSources;

  private int nextSet;
  private boolean closed;

  /** From what {@link ReceiverAssembly} (the injector) binds; {@code planner} is never null. */
  Receiver(
      ReceiverContext context,
      Transport transport,
      SourceDiscovery discovery,
      GeometrySource geometry,
      Installer installer,
      PlanBuilder planner,
      Supplier<WirePolicy> wirePolicy,
      RefitRecords records,
      InPlaceTarget inPlace,
      List<RefitListener> boundListeners,
      ReceiverExtras extras) {
    this.config = context.config();
    PlanBuilder strictPlanner = extras.strictPlanner();
    if (strictPlanner == null && planner instanceof ReshardPlanner rp) {
      strictPlanner = (capture, sources, maxSegments) -> rp.planStaged(capture, sources);
    }
    if (config.verify() == VerifyMode.STRICT && strictPlanner == null) {
      throw new IllegalStateException(
          "mx.receiver.verify=strict needs a strict staged planner (ModelExpress; ARCHITECTURE §7.3); "
              + "none was configured");
    }
    if (context.inPlace() != (inPlace != null)) {
      throw new IllegalArgumentException(
          "the receiver context was concluded for a receiver "
              + (context.inPlace() ? "writing live weights in place" : "with receive buffers")
              + ", but this one "
              + (inPlace != null ? "writes them in place" : "has receive buffers"));
    }
    List<RefitListener> listeners = new ArrayList<>(extras.listeners());
    listeners.addAll(boundListeners);
    this.parts =
        new ReceiverParts(
            context,
            Objects.requireNonNull(transport, "transport"),
            Objects.requireNonNull(discovery, "discovery"),
            Objects.requireNonNull(geometry, "geometry"),
            Objects.requireNonNull(installer, "installer"),
            Objects.requireNonNull(planner, "planner"),
            strictPlanner,
            Objects.requireNonNull(wirePolicy, "wirePolicy"),
            Objects.requireNonNull(extras.digests(), "digests"),
            extras.rediscoverEachStep(),
            // Without a fresh table per step there is no fresh claim to trust.
            extras.delta() && extras.rediscoverEachStep(),
            extras.sharedDelta(),
            Objects.requireNonNull(records, "records"),
            listeners.isEmpty() ? RefitListeners.jvmWide() : listenersOf(listeners),
            Objects.requireNonNull(extras.memory(), "memory"),
            inPlace);
    MemoryOps ops = extras.memoryOps();
    this.device = ops != null && ops.kind().isDevice() ? ops : null;
    if (device != null && !device.kind().equals(parts.memory())) {
      throw new IllegalArgumentException(
          "receiver memory "
              + parts.memory()
              + " but its memory operations are for "
              + device.kind());
    }
    this.step = new RefitStep(parts, () -> device);
  }

  private static RefitListener listenersOf(List<RefitListener> listeners) {
    List<RefitListener> all = new ArrayList<>();
    all.add(RefitListeners.jvmWide());
    all.addAll(listeners);
    return RefitListeners.of(all);
  }

  /**
   * Where the receive buffers and staging live ({@code host} unless {@link Builder#memory} said
   * otherwise).
   */
  public MemoryKind memory() {
    return parts.memory();
  }

  public static Builder builder() {
    return new Builder();
  }

  public ReceiverConfig config() {
    return config;
  }

  /** Everything this receiver was configured with, concluded when it was built. */
  public ReceiverContext context() {
    return parts.context();
  }

  /** The plan of the last successful prepare, or null before it. */
  public synchronized TransferPlan plan() {
    return prepared == null ? null : prepared.plan();
  }

  /**
   * The publisher sessions the kept plan reads from (empty before the first prepare or after the
   * plan was dropped): the tables a warm step needs fresh.
   */
  public synchronized java.util.Set<String> plannedSessions() {
    return prepared == null ? java.util.Set.of() : java.util.Set.copyOf(prepared.plan().sessions());
  }

  /** The coverage of the last successful prepare, or null before it. */
  public synchronized Coverage coverage() {
    return prepared == null ? null : prepared.coverage();
  }

  /** Whether this receiver writes the engine's live weights in place ({@link Builder#inPlace}). */
  public boolean inPlace() {
    return parts.inPlace() != null;
  }

  /** The staging budget of the last prepare in bytes, or -1 before it. */
  public synchronized long stagingBudget() {
    return prepared == null ? -1 : prepared.stagingBudget();
  }

  /** Native bytes held for receive buffers and staging (0 before prepare). */
  public synchronized long nativeBytes() {
    return prepared == null ? 0 : prepared.buffers().bytes();
  }

  /** How many times refits built their descriptor lists (a cache hit builds nothing). */
  public synchronized long descriptorBuilds() {
    return step.descriptorBuilds();
  }

  /**
   * Drops the plan and everything built for it (descriptor cache, buffers, registrations): the next
   * refit prepares again from discovery. Call it when publishers restarted or resharded; buffers
   * the installer was given before are released, so an installer must not hold them across this
   * call.
   */
  public synchronized void invalidate() {
    ensureOpen();
    if (prepared != null) {
      PreparedPlan p = prepared;
      prepared = null;
      nextSet = 0;
      p.close();
    }
  }

  /**
   * Prepares now instead of on the first refit (discovery, capture, plan, gates, peers, buffers).
   * Does nothing when already prepared.
   */
  public synchronized void prepare() {
    ensureOpen();
    if (prepared == null) {
      // Its stage events belong to no step yet.
      RefitListener.Refit none =
          new RefitListener.Refit(config.rank(), -1, parts.transport().name());
      try (StageClock.Scope stageEvents = StageClock.enter(none)) {
        prepared = doPrepare();
      }
    }
  }

  private PreparedPlan doPrepare() {
    if (parts.memory().isDevice() && device == null) {
      device = MemoryOpsProvider.forKind(parts.memory(), MemoryOpsProvider.registry());
    }
    PreparedPlan p = new Preparation(parts, device).prepare();
    sourceStep = p.found().step();
    currentSources = p.found().sources();
    return p;
  }

  /**
   * Runs one refit and returns its metrics: {@code step, bytes_received, segments, converts,
   * full_pull_sources, exact_descriptors, descriptor_savings, extra_wire_bytes, unbounded_sources,
   * fallback, verified_shards, unverifiable_shards} and every stage time in seconds (6 decimals;
   * the {@code prepare_*} stages only on the step that prepared).
   *
   * @throws dev.mx.api.error.MxException subclasses naming what failed; nothing was installed then
   */
  public synchronized Map<String, Object> updateWeights(long step) {
    ensureOpen();
    RefitListener listener = parts.listener();
    RefitListener.Refit id = new RefitListener.Refit(config.rank(), step, parts.transport().name());
    long began = System.nanoTime();
    listener.refitStarted(id);
    try (StageClock.Scope stageEvents = StageClock.enter(id)) {
      return refit(step, id, began, listener);
    }
  }

  private Map<String, Object> refit(
      long step, RefitListener.Refit id, long began, RefitListener listener) {
    Map<String, Double> stages = new LinkedHashMap<>();
    try {
      if (prepared != null && parts.rediscoverEachStep()) {
        rediscover(stages);
      }
      if (prepared == null) {
        prepared = doPrepare();
        stages.putAll(prepared.prepareStages());
      }
    } catch (RuntimeException e) {
      RefitReport.publishFailure(listener, id, began, e, stages);
      throw e;
    }
    PreparedPlan p = prepared;
    try {
      RefitStep.Refitted done =
          this.step.run(step, p, p.sets().get(nextSet), stages, currentSources, sourceStep);
      if (p.sets().size() > 1) {
        nextSet = (nextSet + 1) % p.sets().size();
      }
      done.report().publish(listener, id, began);
      return done.metrics();
    } catch (RuntimeException e) {
      LOG.warn(
          "rank {} step {}: refit failed, nothing was installed: {}",
          config.rank(),
          step,
          e.toString());
      RefitReport.publishFailure(listener, id, began, e, stages);
      throw e;
    }
  }

  /**
   * Re-reads the publishers' tables before a warm step. Unchanged geometry keeps the plan and takes
   * the fresh digests (publishers write new weights in place and republish); changed geometry (a
   * restart or reshard) drops the plan so this step prepares again.
   */
  private void rediscover(Map<String, Double> stages) {
    StageClock rediscoverClock = StageClock.start("rediscover_s");
    DiscoveredSources fresh =
        Preparation.spread(
            parts.discovery().discover(config.timeout()), config.rank(), parts.transport());
    SourceChecks.requireTiled(fresh.sources());
    rediscoverClock.stopInto(stages);
    if (!sameGeometry(prepared.found().sources(), fresh.sources())) {
      LOG.warn("rank {}: publishers changed their shard geometry; planning again", config.rank());
      invalidate();
      return;
    }
    for (BufferSet s : prepared.sets()) {
      if (s.verifier != null) {
        s.verifier.refreshDigests(fresh.sources());
      }
      for (StagedWork w : s.local.staged()) {
        if (w.verifies()) {
          ShardStaging.Staged st = w.staged();
          String d = ShardVerifier.freshDigest(fresh.sources(), st.source(), st.shard(), st.tile());
          if (d == null) {
            throw new UnverifiableShardException(
                st.source(),
                st.shard().shardOffset(),
                st.shard().session(),
                "the publisher no longer publishes this staged shard or its digest");
          }
          w.refreshDigest(d);
        }
      }
    }
    sourceStep = fresh.step();
    currentSources = fresh.sources();
  }

  /** Same sources, shapes, dtypes and shards, digests aside ({@link SourceChecks#sameGeometry}). */
  static boolean sameGeometry(Map<String, SourceInfo> a, Map<String, SourceInfo> b) {
    return SourceChecks.sameGeometry(a, b);
  }

  private void ensureOpen() {
    if (closed) {
      throw new IllegalStateException("receiver rank " + config.rank() + " is closed");
    }
  }

  /** Releases worker threads, registrations and native memory (in reverse order); idempotent. */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    if (prepared != null) {
      PreparedPlan p = prepared;
      prepared = null;
      p.close();
    }
  }

  /**
   * Assembles a receiver; transport, discovery, geometry and installer are required, the rest has
   * defaults ({@link AbstractReceiverBuilder} documents every option).
   */
  public static final class Builder extends AbstractReceiverBuilder<Builder> {
    private Builder() {}

    @Override
    Builder self() {
      return this;
    }

    /**
     * Builds the receiver through a Guice injector holding {@link ReceiverAssembly} and these
     * options, the way {@code dev.mx.refit.guice.ReceiverModule} does. Does no native work: memory
     * is allocated by the first refit.
     */
    public Receiver build() {
      ReceiverContext c = concludedContext();
      Transport t = Objects.requireNonNull(transport, "transport");
      SourceDiscovery d = Objects.requireNonNull(discovery, "discovery");
      GeometrySource g = Objects.requireNonNull(geometry, "geometry");
      Installer i = Objects.requireNonNull(installer, "installer");
      RefitRecords r = Objects.requireNonNull(records, "records");
      PlanBuilder p = planner != null ? planner : c.defaultPlanner();
      Supplier<WirePolicy> w = wirePolicy;
      if (w == null) {
        WirePolicy fromConfig = WirePolicies.create(c.config().wire());
        w = () -> fromConfig;
      }
      Supplier<WirePolicy> policy = w;
      ReceiverExtras extras =
          new ReceiverExtras(
              strictPlanner,
              Objects.requireNonNull(digests, "digests"),
              rediscoverEachStep,
              delta,
              sharedDelta,
              Objects.requireNonNull(memory, "memory"),
              memoryOps,
              List.copyOf(listeners));
      InPlaceTarget target = inPlace;
      Module options =
          new AbstractModule() {
            @Override
            protected void configure() {
              bind(ReceiverContext.class).toInstance(c);
              bind(Transport.class).toInstance(t);
              bind(SourceDiscovery.class).toInstance(d);
              bind(GeometrySource.class).toInstance(g);
              bind(Installer.class).toInstance(i);
              bind(PlanBuilder.class).toInstance(p);
              bind(WirePolicy.class).toProvider(policy::get);
              bind(RefitRecords.class).toInstance(r);
              if (target != null) {
                OptionalBinder.newOptionalBinder(binder(), InPlaceTarget.class)
                    .setBinding()
                    .toInstance(target);
              }
              OptionalBinder.newOptionalBinder(binder(), ReceiverExtras.class)
                  .setBinding()
                  .toInstance(extras);
            }
          };
      try {
        return Guice.createInjector(
                Stage.PRODUCTION, Receivers.strictBinder(), new ReceiverAssembly(), options)
            .getInstance(Receiver.class);
      } catch (CreationException | ProvisionException e) {
        // The receiver's own refusal, not the injector's report of it.
        if (e.getCause() instanceof RuntimeException cause) {
          throw cause;
        }
        throw e;
      }
    }
  }
}
