package dev.mx.refit;

import dev.mx.api.annotation.Stable;
import dev.mx.api.digest.DigestProvider;
import dev.mx.api.error.TornInstallException;
import dev.mx.api.memory.MemoryOps;
import dev.mx.api.memory.MemoryOpsProvider;
import dev.mx.api.metrics.RefitListener;
import dev.mx.api.metrics.RefitListeners;
import dev.mx.api.plan.PlanBuilder;
import dev.mx.api.refit.GeometrySource;
import dev.mx.api.refit.InPlaceTarget;
import dev.mx.api.refit.Installer;
import dev.mx.api.refit.WirePolicy;
import dev.mx.api.transport.MemoryKind;
import dev.mx.api.transport.Transport;
import dev.mx.api.util.Settings;
import dev.mx.plan.ReshardPlanner;
import dev.mx.refit.stage.DeltaState;
import dev.mx.refit.stage.StagingWaves;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.Supplier;

/**
 * The options of a {@link Receiver} ({@link Receiver.Builder} is the one to use); transport,
 * discovery, geometry and installer are required, the rest has defaults. Every setter returns the
 * builder it was called on.
 *
 * @param <B> the concrete builder
 */
@Stable
public abstract class AbstractReceiverBuilder<B extends AbstractReceiverBuilder<B>> {
  ReceiverConfig config = ReceiverConfig.defaults();
  Settings settings;
  ReceiverContext context;
  Transport transport;
  SourceDiscovery discovery;
  GeometrySource geometry;
  Installer installer;
  PlanBuilder planner;
  PlanBuilder strictPlanner;
  Supplier<WirePolicy> wirePolicy;
  Supplier<DigestProvider> digests = () -> DigestProvider.registry().select();
  boolean rediscoverEachStep;
  boolean delta = true;
  DeltaState sharedDelta;
  RefitRecords records = RefitRecords.logging();
  final List<RefitListener> listeners = new ArrayList<>();
  MemoryKind memory = MemoryKind.HOST;
  MemoryOps memoryOps;
  InPlaceTarget inPlace;
  long stagingBytes = -1;

  /**
   * Write the engine's live weights in place instead of into receive buffers that the installer
   * copies: reads land in {@code target}'s parameters, staged shards are verified before they are
   * copied in, and only a bounded staging budget ({@link #stagingBytes}) is held beside them. A
   * step that fails after it began writing throws {@link TornInstallException} and tells {@code
   * target} ({@link InPlaceTarget#torn}). The installer is still called (last, with the live
   * parameters) once the step verified. The owner registers the live memory with the transport.
   */
  public B inPlace(InPlaceTarget target) {
    this.inPlace = target;
    return self();
  }

  /**
   * The staging budget in bytes (default {@link StagingWaves#PROPERTY} from the settings, else
   * {@link StagingWaves#DEFAULT_BYTES} or what the largest staged unit needs): staged shards beyond
   * it go in later waves of the same refit. A budget that cannot hold the largest unit fails the
   * prepare naming the unit and the bytes needed.
   */
  public B stagingBytes(long bytes) {
    this.stagingBytes = bytes;
    return self();
  }

  /**
   * Where receive buffers and staging live (default host). Device memory ({@code cuda:N}) takes its
   * allocation, re-slice, casts, staged copies and digests from the {@link MemoryOpsProvider}
   * serving it, and is registered with the transport under that kind (a transport that cannot read
   * it fails naming both).
   */
  public B memory(MemoryKind kind) {
    this.memory = Objects.requireNonNull(kind, "memory");
    return self();
  }

  /**
   * Memory operations to use for {@link #memory} instead of a provider's (their kind must equal
   * it).
   */
  public B memoryOps(MemoryOps ops) {
    this.memoryOps = ops;
    if (ops != null) {
      this.memory = ops.kind().isDevice() ? ops.kind() : this.memory;
    }
    return self();
  }

  public B config(ReceiverConfig c) {
    this.config = c;
    return self();
  }

  /**
   * Where the settings beyond {@link #config} ({@link ReceiverSetting}) are read when the receiver
   * is built; default the system properties and environment. Read once: a setting changed later
   * takes effect in the next receiver.
   */
  public B settings(Settings s) {
    this.settings = s;
    return self();
  }

  /**
   * A context concluded already, in place of {@link #config}, {@link #settings} and {@link
   * #stagingBytes} (its {@link ReceiverContext#inPlace()} must match {@link #inPlace}).
   */
  public B context(ReceiverContext c) {
    this.context = Objects.requireNonNull(c, "context");
    return self();
  }

  /** The context given, or {@link #config} concluded with {@link #settings}. */
  ReceiverContext concludedContext() {
    if (context != null) {
      return context;
    }
    ReceiverConfig c = Objects.requireNonNull(config, "config");
    if (stagingBytes > 0) {
      c = c.withStagingBytes(stagingBytes);
    }
    return settings == null
        ? ReceiverContext.conclude(c, inPlace != null)
        : ReceiverContext.conclude(c, settings, inPlace != null);
  }

  /**
   * The transport reads go through; the receiver registers its buffers with it but does not close
   * it.
   */
  public B transport(Transport t) {
    this.transport = t;
    return self();
  }

  public B discovery(SourceDiscovery d) {
    this.discovery = d;
    return self();
  }

  public B geometry(GeometrySource g) {
    this.geometry = g;
    return self();
  }

  public B installer(Installer i) {
    this.installer = i;
    return self();
  }

  /**
   * Adds a listener told about this receiver's refits (stages, bytes, verification, installs),
   * after {@link RefitListeners#jvmWide()} (the JFR events and JVM-wide registrations).
   */
  public B listener(RefitListener l) {
    listeners.add(Objects.requireNonNull(l, "listener"));
    return self();
  }

  /**
   * The planner for {@code whole-shards} and {@code off} verification; default a {@link
   * ReshardPlanner} reading the receiver's settings. A {@link ReshardPlanner} also provides strict
   * staged planning.
   */
  public B planner(PlanBuilder p) {
    this.planner = p;
    return self();
  }

  /**
   * The strict staged planner (ModelExpress; ARCHITECTURE §7.3) for {@code
   * mx.receiver.verify=strict}; default {@link ReshardPlanner#planStaged} when the planner is a
   * {@link ReshardPlanner}.
   */
  public B strictPlanner(PlanBuilder p) {
    this.strictPlanner = p;
    return self();
  }

  /** A fixed wire policy (default: the one {@link ReceiverConfig#wire()} names). */
  public B wirePolicy(WirePolicy w) {
    Objects.requireNonNull(w, "wirePolicy");
    this.wirePolicy = () -> w;
    return self();
  }

  /** A wire policy consulted at every refit (e.g. a Guice provider). */
  public B wirePolicy(Supplier<WirePolicy> w) {
    this.wirePolicy = w;
    return self();
  }

  /**
   * Whether a step keeps the sources the publishers claim unchanged ({@code changed_step}) since
   * the buffers were filled, reading only what changed (default on; takes effect with {@link
   * #rediscoverEachStep}, which brings each step's claims). A claim whose digest changed fails the
   * refit naming the tensor. Off: every step reads everything.
   */
  public B delta(boolean on) {
    this.delta = on;
    return self();
  }

  /**
   * What the live weights hold, for receivers that take turns writing the same {@link #inPlace}
   * target (one per trainer buffer set): each must see what the others installed, or forgot when a
   * step tore them. Without it, receivers of one in-place target share {@link DeltaState#of(Object)
   * its state}; receivers into their own buffers keep their own.
   */
  public B deltaState(DeltaState shared) {
    this.sharedDelta = Objects.requireNonNull(shared, "shared");
    return self();
  }

  /**
   * Re-read the publishers' tables before every warm step (default off, as in ModelExpress's legacy
   * receiver): takes each step's fresh digests, and re-plans when the geometry changed.
   */
  public B rediscoverEachStep(boolean on) {
    this.rediscoverEachStep = on;
    return self();
  }

  /**
   * The digest used for verification; default the best {@link DigestProvider} on the class path,
   * resolved at the first verification.
   */
  public B digests(Supplier<DigestProvider> d) {
    this.digests = d;
    return self();
  }

  public B digests(DigestProvider d) {
    Objects.requireNonNull(d, "digests");
    this.digests = () -> d;
    return self();
  }

  /**
   * Where coverage, stage and ceiling records go; default the {@code dev.mx.refit.records} logger.
   */
  public B records(RefitRecords r) {
    this.records = r;
    return self();
  }

  AbstractReceiverBuilder() {}

  /** This builder, for chaining. */
  abstract B self();
}
