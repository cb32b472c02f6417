package dev.mx.refit.version;

import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.ShardTable;
import dev.mx.api.metadata.SlotStatus;
import dev.mx.api.metadata.VersionSlot;
import dev.mx.api.metadata.WeightVersion;
import dev.mx.api.metadata.WeightVersionException;
import dev.mx.api.metadata.WeightVersionState;
import dev.mx.api.metadata.WeightVersionStore;
import dev.mx.api.plan.SourceInfo;
import dev.mx.api.refit.Installer;
import dev.mx.api.transport.Transport;
import dev.mx.metadata.Discovery;
import dev.mx.metadata.InconsistentSourcesException;
import dev.mx.metadata.MetadataStoreException;
import dev.mx.metadata.ShardTableCodec;
import dev.mx.plan.merge.MergedSources;
import dev.mx.plan.merge.ReplicaMerge;
import dev.mx.refit.DiscoveredSources;
import dev.mx.refit.Receiver;
import dev.mx.refit.SourceDiscovery;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The receiver side of the weight-version protocol (docs/VERSIONS.md): {@link #next(Duration)}
 * waits for a readable version (READY, no STALE slot) newer than the last one installed, leases it
 * (renewed every third of the TTL by a {@link LeaseKeeper}), fetches its slots' shard tables,
 * checks each table's SHA-256 against the digest its publisher advertised, checks that every table
 * carries the version's step, and runs one refit through a {@link Receiver}; the lease is dropped
 * afterwards whatever happened.
 *
 * <p>A version that fails — a STALE or vanished publisher, a digest mismatch, a failed read or
 * verification — is never installed (the receiver installs only after everything succeeded, and the
 * installer given to it re-checks the lease first); the follower then waits for the next readable
 * version, and when none arrives before the timeout fails with {@link NoReadableVersionException}
 * naming each version it tried and why.
 *
 * <p>Receivers are made by the caller's {@link ReceiverFactory} (with {@code
 * rediscoverEachStep(true)}, so warm steps take each version's digests) and kept per shard
 * geometry: a trainer's two buffer sets live at different addresses, so the follower keeps one
 * prepared receiver for each (at most {@link Builder#maxReceivers}) instead of planning again every
 * step. It owns those receivers and closes them; the installer must therefore copy what it is given
 * (as {@code LiveWeights} does) rather than keep the receive buffers.
 */
public final class VersionFollower implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(VersionFollower.class);

  /**
   * Makes a receiver that discovers through {@code discovery} and installs through {@code
   * installer}.
   */
  @FunctionalInterface
  public interface ReceiverFactory {
    Receiver create(SourceDiscovery discovery, Installer installer);
  }

  /** Which readable version to take next. */
  public enum Selection {
    /**
     * The oldest one newer than the last installed: every step in order, skipping only what is
     * gone.
     */
    NEXT,
    /** The newest one: catch up at once, skipping intermediate steps. */
    LATEST
  }

  /** One installed version and the refit's metrics. */
  public record Followed(WeightVersion version, Map<String, Object> metrics) {
    public long step() {
      return version.step();
    }
  }

  private final WeightVersionStore versions;
  private final String model;
  private final String holder;
  private final Duration leaseTtl;
  private final Duration pollInterval;
  private final Selection selection;
  private final int maxAttempts;
  private final int maxReceivers;
  private final Installer installer;
  private final ReceiverFactory factory;
  private final Discovery.Expectation expectation;
  private final Transport transport;

  /**
   * The endpoint blob each publisher session was last seen with, to notice a restarted publisher.
   */
  private final Map<String, byte[]> peerBlobs = new HashMap<>();

  private final String storeUri;
  private final ShardTableCodec codec = ShardTableCodec.standard();

  /** Prepared receivers by geometry fingerprint, least recently used first. */
  private final LinkedHashMap<String, Receiver> receivers = new LinkedHashMap<>(4, 0.75f, true);

  private volatile DiscoveredSources current;
  private volatile LeaseKeeper currentLease;
  private Long lastStep;
  private String lastVersion;
  private boolean closed;

  private VersionFollower(Builder b) {
    this.versions = b.store.versions();
    this.model = b.model;
    this.holder = b.holder;
    this.leaseTtl = b.leaseTtl;
    this.pollInterval = b.pollInterval;
    this.selection = b.selection;
    this.maxAttempts = b.maxAttempts;
    this.maxReceivers = b.maxReceivers;
    this.installer = b.installer;
    this.factory = b.factory;
    this.expectation = b.expectation;
    this.transport = b.transport;
    this.storeUri = b.store.uri();
    this.lastStep = b.afterStep;
  }

  public static Builder builder(MetadataStore store, String model) {
    return new Builder(store, model);
  }

  /**
   * The step of the last installed version, or null before the first (or the builder's start step).
   */
  public synchronized Long lastStep() {
    return lastStep;
  }

  /** The id of the last installed version, or null. */
  public synchronized String lastVersion() {
    return lastVersion;
  }

  /** Prepared receivers held now (one per distinct publisher geometry seen recently). */
  public synchronized int receiverCount() {
    return receivers.size();
  }

  /**
   * Installs the next readable version (per the {@link Selection}) newer than the last one.
   *
   * @throws NoReadableVersionException when none was installed within {@code timeout}, naming what
   *     failed
   */
  public synchronized Followed next(Duration timeout) {
    return follow(timeout, null);
  }

  /**
   * Installs the version carrying exactly {@code step}, waiting at most {@code timeout} for it to
   * become readable, and never another one: for a caller that knows which step comes next (a job
   * publishing a fixed series, as {@code mx demo} does). Where {@link #next} would wait for a newer
   * version, this fails at once when that version failed {@link Builder#maxAttempts} times, or once
   * seen turned unreadable (a STALE slot) or vanished; a version still STAGING is waited for until
   * the timeout, and the failure then names its missing slots.
   *
   * @throws NoReadableVersionException naming the version, what was tried and why
   * @throws IllegalArgumentException when {@code step} is not above the last installed step
   */
  public synchronized Followed followStep(long step, Duration timeout) {
    if (lastStep != null && step <= lastStep) {
      throw new IllegalArgumentException(
          holder
              + ": step "
              + step
              + " of '"
              + model
              + "' is not newer than the installed step "
              + lastStep);
    }
    return follow(timeout, step);
  }

  /** A version given up on in {@link #followStep}: ends the wait at once. */
  private static final class GiveUp extends RuntimeException {
    GiveUp(String message) {
      super(message, null, false, false);
    }
  }

  private Followed follow(Duration timeout, Long exactStep) {
    if (closed) {
      throw new IllegalStateException(
          "version follower '" + holder + "' of '" + model + "' is closed");
    }
    long started = System.nanoTime();
    long deadline = started + timeout.toNanos();
    Map<String, String> failures = new LinkedHashMap<>();
    Map<String, Integer> attempts = new TreeMap<>();
    RuntimeException lastFailure = null;
    boolean[] seen = new boolean[1];
    while (true) {
      WeightVersion v;
      try {
        v = exactStep == null ? pick(attempts) : pickStep(exactStep, attempts, seen);
      } catch (GiveUp e) {
        failures.put("step " + exactStep, e.getMessage());
        throw noVersion(timeout, failures, lastFailure);
      } catch (MetadataStoreException e) {
        // The store is unreachable (a restarting Redis): keep asking until the timeout.
        if (lastFailure == null || !(lastFailure instanceof MetadataStoreException)) {
          LOG.warn(
              "{}: cannot list the versions of '{}', retrying: {}", holder, model, e.getMessage());
        }
        lastFailure = e;
        failures.put("listing versions", e.getMessage());
        v = null;
      }
      if (v == null) {
        if (System.nanoTime() - deadline > 0) {
          throw noVersion(timeout, failures, lastFailure);
        }
        sleep();
        continue;
      }
      attempts.merge(v.id(), 1, Integer::sum);
      try {
        return install(v, (System.nanoTime() - started) / 1e9);
      } catch (InconsistentSourcesException e) {
        // The publishers run another job than this receiver expects: no later version can fix that.
        throw e;
      } catch (RuntimeException e) {
        lastFailure = e;
        failures.put(
            v.id() + " (step " + v.step() + ", attempt " + attempts.get(v.id()) + ")",
            e.getMessage());
        LOG.warn(
            "{}: version '{}' (step {}) of '{}' was not installed: {}",
            holder,
            v.id(),
            v.step(),
            model,
            e.toString());
      }
    }
  }

  /** The candidate per the selection, skipping versions tried {@code maxAttempts} times. */
  private WeightVersion pick(Map<String, Integer> attempts) {
    WeightVersion best = null;
    for (WeightVersion v : versions.versions(model)) {
      if (!v.isReadable()
          || (lastStep != null && v.step() <= lastStep)
          || attempts.getOrDefault(v.id(), 0) >= maxAttempts) {
        continue;
      }
      if (best == null
          || (selection == Selection.NEXT
              ? WeightVersionStore.BY_STEP.compare(v, best) < 0
              : WeightVersionStore.BY_STEP.compare(v, best) > 0)) {
        best = v;
      }
    }
    return best;
  }

  /**
   * The version of {@code step} when it is readable and has attempts left; null to wait (not there
   * yet, or still STAGING without a STALE slot); {@link GiveUp} when it can no longer be installed.
   */
  private WeightVersion pickStep(long step, Map<String, Integer> attempts, boolean[] seen) {
    WeightVersion found = null;
    for (WeightVersion v : versions.versions(model)) {
      if (v.step() == step) {
        found = v;
        break;
      }
    }
    if (found == null) {
      if (seen[0]) {
        throw new GiveUp(
            "the version of step "
                + step
                + " vanished (its publishers reclaimed it, or the store lost it)");
      }
      return null;
    }
    seen[0] = true;
    if (attempts.getOrDefault(found.id(), 0) >= maxAttempts) {
      throw new GiveUp(found.describe() + " failed " + maxAttempts + " time(s)");
    }
    if (found.isReadable()) {
      return found;
    }
    if (!found.staleSlots().isEmpty() || found.state() == WeightVersionState.RELEASING) {
      throw new GiveUp(found.describe() + " can no longer be read");
    }
    return null;
  }

  private Followed install(WeightVersion v, double waitedSeconds) {
    try (LeaseKeeper lease = LeaseKeeper.acquire(versions, model, v.id(), holder, leaseTtl)) {
      currentLease = lease;
      DiscoveredSources sources = fetch(v);
      reconnectRestarted(sources.peerMetadata());
      Receiver receiver = receiverFor(sources);
      current = sources;
      Map<String, Object> metrics = receiver.updateWeights(v.step());
      lastStep = v.step();
      lastVersion = v.id();
      Map<String, Object> m = new LinkedHashMap<>(metrics);
      m.put("version", v.id());
      // Time from the call until this version was picked: waiting for publishers, not refitting.
      m.put("version_wait_s", waitedSeconds);
      if (receiver.coverage() != null) {
        m.put("coverage", receiver.coverage().coverage());
      }
      return new Followed(v, m);
    } finally {
      currentLease = null;
    }
  }

  /**
   * The version's tables, each checked against its advertised SHA-256 and step, merged into
   * sources. Read under the lease, so the tables cannot change underneath.
   */
  private DiscoveredSources fetch(WeightVersion v) {
    List<VersionSlot> slots = versions.slots(model, v.id());
    Map<String, VersionSlot> bySlot = new TreeMap<>();
    slots.forEach(s -> bySlot.put(s.slot(), s));
    List<ShardTable> tables = new ArrayList<>();
    for (String expected : v.expectedSlots()) {
      VersionSlot s = bySlot.get(expected);
      if (s == null) {
        throw new WeightVersionException(
            WeightVersionException.Reason.NOT_FOUND,
            "slot '"
                + expected
                + "' of version '"
                + v.id()
                + "' vanished (its publisher reclaimed it, or the store lost it)");
      }
      if (s.status() == SlotStatus.STALE) {
        throw new WeightVersionException(
            WeightVersionException.Reason.WRONG_STATE,
            "slot '"
                + expected
                + "' of version '"
                + v.id()
                + "' is STALE: its publisher (worker '"
                + s.workerId()
                + "') went away");
      }
      ShardTable t = codec.decode(s.verified(model).table());
      if (expectation != null) {
        expectation.requireDeclaredBy(
            t,
            "publisher '"
                + s.workerId()
                + "' (slot '"
                + expected
                + "' of version '"
                + v.id()
                + "')",
            storeUri);
      }
      if (t.publisherStep() == null || t.publisherStep() != v.step()) {
        throw new WeightVersionException(
            WeightVersionException.Reason.CONFLICT,
            "slot '"
                + expected
                + "' of version '"
                + v.id()
                + "' (worker '"
                + s.workerId()
                + "') carries a table of step "
                + t.publisherStep()
                + ", not the version's step "
                + v.step());
      }
      tables.add(t);
    }
    MergedSources merged = ReplicaMerge.merge(tables);
    Map<String, byte[]> peers = new LinkedHashMap<>();
    for (ShardTable t : tables) {
      peers.put(t.agentName(), t.agentMetadata());
    }
    return new DiscoveredSources(merged.sources(), peers);
  }

  /**
   * Connects again to each publisher session whose endpoint blob changed since an earlier version:
   * a trainer rank restarted under the same session name is another process, and reads through the
   * old connection would fail. Only with {@link Builder#transport}; a receiver connects a session
   * it does not know itself.
   */
  private void reconnectRestarted(Map<String, byte[]> peers) {
    if (transport == null) {
      return;
    }
    for (Map.Entry<String, byte[]> e : peers.entrySet()) {
      byte[] before = peerBlobs.put(e.getKey(), e.getValue());
      if (before != null
          && !Arrays.equals(before, e.getValue())
          && transport.isConnected(e.getKey())) {
        LOG.info(
            "{}: publisher session '{}' of '{}' has a new endpoint (restarted): connecting again",
            holder,
            e.getKey(),
            model);
        transport.connect(e.getKey(), e.getValue());
      }
    }
  }

  private Receiver receiverFor(DiscoveredSources sources) {
    String key = fingerprint(sources.sources());
    Receiver r = receivers.get(key);
    if (r != null) {
      return r;
    }
    r = factory.create(timeout -> current, this::guardedInstall);
    receivers.put(key, r);
    while (receivers.size() > maxReceivers) {
      String eldest = receivers.keySet().iterator().next();
      receivers.remove(eldest).close();
    }
    return r;
  }

  /**
   * The receiver's installer: installs only while the version's lease is still held; over a
   * transport that cannot revoke deregistered memory (or an unknown one) only once the store
   * confirmed, after the reads, that the lease never lapsed and no publisher went away.
   */
  private void guardedInstall(long step, Map<String, java.lang.foreign.MemorySegment> buffers) {
    LeaseKeeper lease = currentLease;
    if (lease == null) {
      throw new IllegalStateException(
          holder + ": an install of step " + step + " outside a leased version");
    }
    if (transport == null || !transport.revokesDeregisteredMemory()) {
      lease.confirm();
    } else {
      lease.check();
    }
    installer.install(step, buffers);
  }

  /**
   * Where every shard lives (session, address, box), digests aside: equal exactly when a plan is
   * reusable.
   */
  static String fingerprint(Map<String, SourceInfo> sources) {
    StringBuilder sb = new StringBuilder();
    for (Map.Entry<String, SourceInfo> e : new TreeMap<>(sources).entrySet()) {
      SourceInfo s = e.getValue();
      sb.append(e.getKey())
          .append('|')
          .append(s.dtype())
          .append('|')
          .append(s.globalShape())
          .append('|');
      s.shards().stream()
          .map(x -> x.withDigest(null).toString())
          .sorted()
          .forEach(x -> sb.append(x).append(';'));
      sb.append('\n');
    }
    return sb.toString();
  }

  private NoReadableVersionException noVersion(
      Duration timeout, Map<String, String> failures, RuntimeException last) {
    StringBuilder sb =
        new StringBuilder(
            holder
                + ": no version of '"
                + model
                + "' newer than "
                + (lastStep == null ? "none" : "step " + lastStep)
                + " could be installed within "
                + timeout.toMillis()
                + " ms");
    if (!failures.isEmpty()) {
      sb.append("; tried: ");
      failures.forEach((v, why) -> sb.append(v).append(": ").append(why).append("; "));
    }
    List<String> seen;
    try {
      seen = versions.versions(model).stream().map(WeightVersion::describe).toList();
    } catch (MetadataStoreException e) {
      seen = List.of("unreadable: " + e.getMessage());
    }
    sb.append(
        seen.isEmpty() ? " (the store holds no versions)" : " (the store holds " + seen + ")");
    return last == null
        ? new NoReadableVersionException(sb.toString())
        : new NoReadableVersionException(sb.toString(), last);
  }

  private void sleep() {
    try {
      TimeUnit.NANOSECONDS.sleep(pollInterval.toNanos());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(
          holder + ": interrupted while waiting for a version of '" + model + "'", e);
    }
  }

  /** Closes every receiver this follower made; idempotent. */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    List<Receiver> all = new ArrayList<>(receivers.values());
    receivers.clear();
    dev.mx.api.util.Closeables.closeAll(all.reversed());
  }

  /** Settings of a follower; holder, installer and receiver factory are required. */
  public static final class Builder {
    private final MetadataStore store;
    private final String model;
    private String holder = "receiver-" + UUID.randomUUID();
    private Duration leaseTtl = Duration.ofSeconds(10);
    private Duration pollInterval = Duration.ofMillis(50);
    private Selection selection = Selection.NEXT;
    private int maxAttempts = 2;
    private int maxReceivers = 2;
    private Installer installer;
    private ReceiverFactory factory;
    private Long afterStep;
    private Discovery.Expectation expectation;
    private Transport transport;

    private Builder(MetadataStore store, String model) {
      this.store = Objects.requireNonNull(store, "store");
      this.model = Objects.requireNonNull(model, "model");
    }

    /** Who holds the leases (this receiver's worker id). */
    public Builder holder(String h) {
      this.holder = Objects.requireNonNull(h, "holder");
      return this;
    }

    /** Lease TTL (default 10 s), renewed every third of it. */
    public Builder leaseTtl(Duration ttl) {
      this.leaseTtl = Objects.requireNonNull(ttl, "leaseTtl");
      return this;
    }

    /** How often the store is asked for new versions (default 50 ms). */
    public Builder pollInterval(Duration d) {
      this.pollInterval = Objects.requireNonNull(d, "pollInterval");
      return this;
    }

    public Builder selection(Selection s) {
      this.selection = Objects.requireNonNull(s, "selection");
      return this;
    }

    /** Tries per version before waiting for a newer one (default 2). */
    public Builder maxAttempts(int n) {
      this.maxAttempts = n;
      return this;
    }

    /**
     * Prepared receivers kept, one per publisher geometry (default 2: a trainer's two buffer sets).
     */
    public Builder maxReceivers(int n) {
      this.maxReceivers = n;
      return this;
    }

    /**
     * Where verified weights go; must copy them (the follower may close the receivers that own
     * them).
     */
    public Builder installer(Installer i) {
      this.installer = Objects.requireNonNull(i, "installer");
      return this;
    }

    public Builder receivers(ReceiverFactory f) {
      this.factory = Objects.requireNonNull(f, "factory");
      return this;
    }

    /**
     * The trainer job the publishers must declare in their tables (default: not checked). A version
     * whose tables declare another topology fails the call at once with {@link
     * InconsistentSourcesException}, naming both topologies.
     */
    public Builder expect(Discovery.Expectation e) {
      this.expectation = e;
      return this;
    }

    /**
     * The transport the receivers read through, so that a publisher restarted under the same
     * session name (its endpoint blob changed between versions) is connected again before its
     * version is read (default: none; connections then stay as the receivers made them). Also
     * whether it revokes deregistered memory: when it does not, or none is given, each install is
     * first confirmed with the store ({@link LeaseKeeper#confirm()}, docs/VERSIONS.md).
     */
    public Builder transport(Transport t) {
      this.transport = t;
      return this;
    }

    /** Follow only versions with a step above this one (default: every version). */
    public Builder afterStep(Long step) {
      this.afterStep = step;
      return this;
    }

    public VersionFollower build() {
      Objects.requireNonNull(installer, "installer");
      Objects.requireNonNull(factory, "receiver factory");
      if (maxAttempts < 1 || maxReceivers < 1) {
        throw new IllegalArgumentException("maxAttempts and maxReceivers must be at least 1");
      }
      if (leaseTtl.isNegative()
          || leaseTtl.isZero()
          || pollInterval.isNegative()
          || pollInterval.isZero()) {
        throw new IllegalArgumentException("lease TTL and poll interval must be positive");
      }
      store.versions(); // fails now, naming the store, when it keeps no versions
      return new VersionFollower(this);
    }
  }
}
