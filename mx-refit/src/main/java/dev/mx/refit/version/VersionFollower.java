package dev.mx.refit.version;

import dev.mx.api.annotation.Stable;
import dev.mx.api.error.TornInstallException;
import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.PublishedShard;
import dev.mx.api.metadata.PublishedTensor;
import dev.mx.api.metadata.ReplicaShard;
import dev.mx.api.metadata.ShardTable;
import dev.mx.api.metadata.SlotStatus;
import dev.mx.api.metadata.VersionSlot;
import dev.mx.api.metadata.WeightVersion;
import dev.mx.api.metadata.WeightVersionException;
import dev.mx.api.metadata.WeightVersionState;
import dev.mx.api.metadata.WeightVersionStore;
import dev.mx.api.metrics.RefitListeners;
import dev.mx.api.plan.SourceInfo;
import dev.mx.api.refit.Installer;
import dev.mx.api.transport.Transport;
import dev.mx.api.util.Settings;
import dev.mx.metadata.Discovery;
import dev.mx.metadata.InconsistentSourcesException;
import dev.mx.metadata.MetadataStoreException;
import dev.mx.metadata.ParallelMap;
import dev.mx.metadata.ShardTableCodec;
import dev.mx.metadata.SlotRanks;
import dev.mx.metadata.progress.PartyRecords;
import dev.mx.metadata.progress.ProgressSettings;
import dev.mx.metadata.progress.StallWatch;
import dev.mx.metadata.progress.StalledPartyException;
import dev.mx.refit.DiscoveredSources;
import dev.mx.refit.Receiver;
import dev.mx.refit.SourceDiscovery;
import dev.mx.refit.embed.StoreDiscovery;
import dev.mx.refit.stage.SourceChecks;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
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
 * version, and fails with {@link NoReadableVersionException} naming each version it tried and why
 * when none can come.
 *
 * <p>Waiting is liveness-based (docs/VERSIONS.md, "Waiting on liveness"): it waits as long as the
 * trainer ranks it waits for — a STAGING version's missing slots, else every slot of the newest
 * version, else every rank seen — heartbeat with advancing progress ({@link PartyRecords}), and
 * fails once one of them made none for the {@link Builder#stallLimit}, naming it and its last phase
 * ("rank slot 2 (worker trainer-2) made no progress for 61.0 s ..., last seen 'digesting step 0,
 * 12/40 shards'"). The duration given to {@link #next(Duration)} and {@link #followStep(long,
 * Duration)} is an optional overall cap on top; null sets none.
 *
 * <p>Receivers are made by the caller's {@link ReceiverFactory} (with {@code
 * rediscoverEachStep(true)}, so warm steps take each version's digests) and kept per shard
 * geometry: a trainer's two buffer sets live at different addresses, so the follower keeps one
 * prepared receiver for each (at most {@link Builder#maxReceivers}) instead of planning again every
 * step. It owns those receivers and closes them; the installer must therefore copy what it is given
 * (as {@code LiveWeights} does) rather than keep the receive buffers.
 */
@Stable
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
     * gone. Before the first install (and without {@link Builder#afterStep}) it begins with the
     * newest, as a receiver started late should.
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
  private final Duration stallLimit;
  private final MetadataStore store;
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

  private final boolean restorePrevious;
  private final boolean holdUntilCommit;

  /**
   * With {@link Builder#restorePrevious}: the installed version, still leased so that a torn
   * in-place install of the next one can be put back from it.
   */
  private HeldVersion installed;

  /** With {@link Builder#holdUntilCommit}: the version before {@link #installed}, until commit. */
  private HeldVersion previous;

  /** A version kept leased after its install, with what re-reading it needs. */
  private record HeldVersion(WeightVersion version, DiscoveredSources sources, LeaseKeeper lease) {}

  private volatile DiscoveredSources current;
  private volatile LeaseKeeper currentLease;
  private Long lastStep;
  private String lastVersion;
  private boolean closed;

  /** The versions as the last pick listed them: they say which ranks a wait waits on. */
  private List<WeightVersion> listed = List.of();

  private VersionFollower(Builder b) {
    this.versions = b.store.versions();
    this.model = b.model;
    this.holder = b.holder;
    this.leaseTtl = b.leaseTtl;
    this.pollInterval = b.pollInterval;
    this.stallLimit = b.stallLimit;
    this.store = b.store;
    this.selection = b.selection;
    this.maxAttempts = b.maxAttempts;
    this.maxReceivers = b.maxReceivers;
    this.installer = b.installer;
    this.factory = b.factory;
    this.expectation = b.expectation;
    this.transport = b.transport;
    this.storeUri = b.store.uri();
    this.lastStep = b.afterStep;
    this.restorePrevious = b.restorePrevious;
    this.holdUntilCommit = b.holdUntilCommit;
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
   * Installs the next readable version (per the {@link Selection}) newer than the last one, waiting
   * while the trainer ranks progress.
   *
   * @throws NoReadableVersionException when a rank waited on stalled, naming it and what failed
   */
  public synchronized Followed next() {
    return follow(null, null);
  }

  /**
   * As {@link #next()}, and also failing once {@code cap} (null: none) passed without an install.
   *
   * @throws NoReadableVersionException when a rank waited on stalled or the cap passed, naming what
   *     failed
   */
  public synchronized Followed next(Duration cap) {
    return follow(cap, null);
  }

  /** {@link #followStep(long, Duration)} without an overall cap. */
  public synchronized Followed followStep(long step) {
    return followStep(step, null);
  }

  /**
   * Installs the version carrying exactly {@code step}, waiting at most {@code timeout} for it to
   * become readable (null: no cap; it waits while the ranks progress), and never another one: for a
   * caller that knows which step comes next (a job publishing a fixed series, as {@code mx demo}
   * does). Where {@link #next} would wait for a newer version, this fails at once when that version
   * failed {@link Builder#maxAttempts} times, or once seen turned unreadable (a STALE slot) or
   * vanished; a version still STAGING is waited for while its missing slots' ranks progress (or
   * until the cap), and the failure then names the rank that stalled and its missing slots.
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
    return follow(timeout, Wanted.step(step));
  }

  /**
   * Installs the version with id {@code versionId}, whether or not a listing shows it: as a
   * ModelExpress orchestrator hands its generators a version's uid (an {@code mx://} store finds a
   * version by its RefitService uid, its {@code version_number} the step). It waits at most {@code
   * timeout} (null: no cap) for the version to exist and become readable, and fails at once, as
   * {@link #followStep} does, when it failed {@link Builder#maxAttempts} times or turned
   * unreadable. Its tables may carry no {@code publisher_step} (ModelExpress's trainer adapters
   * write none): each slot's SHA-256 binds its table to the version.
   *
   * @throws NoReadableVersionException naming the version, what was tried and why, also when its
   *     step is not above the last installed step
   */
  public synchronized Followed followVersion(String versionId, Duration timeout) {
    Objects.requireNonNull(versionId, "versionId");
    return follow(timeout, Wanted.id(versionId));
  }

  /** The one version {@link #followStep} or {@link #followVersion} waits for. */
  private record Wanted(Long step, String id) {
    static Wanted step(long step) {
      return new Wanted(step, null);
    }

    static Wanted id(String id) {
      return new Wanted(null, id);
    }

    boolean matches(WeightVersion v) {
      return id != null ? v.id().equals(id) : v.step() == step;
    }

    @Override
    public String toString() {
      return id != null ? "version '" + id + "'" : "step " + step;
    }
  }

  /** A version given up on in {@link #followStep}: ends the wait at once. */
  private static final class GiveUp extends RuntimeException {
    GiveUp(String message) {
      super(message, null, false, false);
    }
  }

  private Followed follow(Duration timeout, Wanted wanted) {
    if (closed) {
      throw new IllegalStateException(
          "version follower '" + holder + "' of '" + model + "' is closed");
    }
    long started = System.nanoTime();
    StallWatch ranks = new StallWatch(stallLimit);
    Map<String, String> failures = new LinkedHashMap<>();
    Map<String, Integer> attempts = new TreeMap<>();
    RuntimeException lastFailure = null;
    boolean[] seen = new boolean[1];
    while (true) {
      WeightVersion v;
      try {
        v = wanted == null ? pick(attempts) : pickWanted(wanted, attempts, seen);
      } catch (GiveUp e) {
        failures.put(wanted.toString(), e.getMessage());
        throw noVersion(null, failures, lastFailure);
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
        if (timeout != null && System.nanoTime() - started - timeout.toNanos() > 0) {
          if (wanted != null && wanted.id() != null && !seen[0]) {
            failures.putIfAbsent(wanted.toString(), "the store holds no version with this id");
          }
          throw noVersion(timeout, failures, lastFailure);
        }
        ranks.sample(() -> PartyRecords.list(store, model));
        try {
          ranks.check(awaitedSlots(wanted));
        } catch (StalledPartyException e) {
          failures.put("waiting", e.getMessage());
          throw noVersion(null, failures, e);
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

  /**
   * The trainer slots a wait for {@code wanted} (null: the next version) waits on: the missing
   * slots of the version it waits for when that one is STAGING, else every slot of the newest
   * version, else (no version yet) none named, which means every rank seen.
   */
  private List<String> awaitedSlots(Wanted wanted) {
    WeightVersion newest = null;
    for (WeightVersion v : listed) {
      if (wanted != null && wanted.matches(v)) {
        return v.missingSlots().isEmpty() ? v.expectedSlots() : v.missingSlots();
      }
      if (newest == null || WeightVersionStore.BY_STEP.compare(v, newest) > 0) {
        newest = v;
      }
    }
    if (newest == null) {
      return List.of();
    }
    boolean awaited = wanted == null && (lastStep == null || newest.step() > lastStep);
    return awaited
            && newest.state() == WeightVersionState.STAGING
            && !newest.missingSlots().isEmpty()
        ? newest.missingSlots()
        : newest.expectedSlots();
  }

  /**
   * The candidate per the selection, skipping versions tried {@code maxAttempts} times. With
   * nothing installed yet the newest wins either way: a receiver started late begins with the
   * newest version, not with whatever old one its trainers still hold.
   */
  private WeightVersion pick(Map<String, Integer> attempts) {
    boolean oldestFirst = selection == Selection.NEXT && lastStep != null;
    WeightVersion best = null;
    listed = versions.versions(model);
    for (WeightVersion v : listed) {
      if (!v.isReadable()
          || (lastStep != null && v.step() <= lastStep)
          || attempts.getOrDefault(v.id(), 0) >= maxAttempts) {
        continue;
      }
      if (best == null
          || (oldestFirst
              ? WeightVersionStore.BY_STEP.compare(v, best) < 0
              : WeightVersionStore.BY_STEP.compare(v, best) > 0)) {
        best = v;
      }
    }
    return best;
  }

  /**
   * The wanted version when it is readable and has attempts left; null to wait (not there yet, or
   * still STAGING without a STALE slot); {@link GiveUp} when it can no longer be installed. A
   * version wanted by id is looked up by it (a store may hold versions no listing shows).
   */
  private WeightVersion pickWanted(Wanted wanted, Map<String, Integer> attempts, boolean[] seen) {
    WeightVersion found = null;
    if (wanted.id() != null) {
      found = versions.version(model, wanted.id()).orElse(null);
      listed = found == null ? List.of() : List.of(found);
    } else {
      listed = versions.versions(model);
      for (WeightVersion v : listed) {
        if (wanted.matches(v)) {
          found = v;
          break;
        }
      }
    }
    if (found == null) {
      if (seen[0]) {
        throw new GiveUp(
            "the "
                + (wanted.id() != null ? "version" : "version of step " + wanted.step())
                + " vanished (its publishers reclaimed it, or the store lost it)");
      }
      return null;
    }
    seen[0] = true;
    if (lastStep != null && found.step() <= lastStep) {
      throw new GiveUp(found.describe() + " is not newer than the installed step " + lastStep);
    }
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
    RefitListeners.jvmWide().versionWaited(model, v.step(), waitedSeconds);
    long began = System.nanoTime();
    LeaseKeeper lease = LeaseKeeper.acquire(versions, model, v.id(), holder, leaseTtl);
    boolean kept = false;
    try {
      currentLease = lease;
      DiscoveredSources sources = fetch(v);
      reconnectRestarted(sources.peerMetadata());
      // Built once: at scale it is a string of every shard of every table.
      String geometry = fingerprint(sources.sources());
      Receiver receiver = receiverFor(geometry);
      current = sources;
      double fetched = (System.nanoTime() - began) / 1e9;
      Map<String, Object> metrics;
      try {
        metrics = receiver.updateWeights(v.step());
      } catch (TornInstallException torn) {
        throw restore(torn);
      }
      lastStep = v.step();
      lastVersion = v.id();
      remember(v, geometry, sources, receiver);
      if (restorePrevious) {
        // Keep this version leased: it is what a torn install of the next one is restored from.
        kept = true;
        HeldVersion before = installed;
        installed = new HeldVersion(v, sources, lease);
        if (holdUntilCommit) {
          release(previous);
          previous = before;
        } else {
          release(before);
        }
      }
      Map<String, Object> m = new LinkedHashMap<>(metrics);
      m.put("version", v.id());
      // Time from the call until this version was picked: waiting for publishers, not refitting.
      m.put("version_wait_s", waitedSeconds);
      // Leasing the version, reading and checking its tables, and finding its receiver.
      m.put("version_fetch_s", fetched);
      // Tables fetched for it: every slot's, or, for a version like the last, those the plan reads.
      m.put("version_tables_fetched", tablesFetched);
      if (receiver.coverage() != null) {
        m.put("coverage", receiver.coverage().coverage());
      }
      return new Followed(v, m);
    } catch (RuntimeException e) {
      forget(); // a retry, or the next version, fetches every table
      throw e;
    } finally {
      currentLease = null;
      if (!kept) {
        lease.close();
      }
    }
  }

  /**
   * After a torn in-place install: re-installs the version installed before (still leased) through
   * its receiver, so the live weights hold it again, verified. Returns the failure to throw: marked
   * restored, or as it was (the restore's own failure suppressed) when there was nothing to restore
   * from or the restore failed too (e.g. a publisher of that version is dead).
   */
  private TornInstallException restore(TornInstallException torn) {
    HeldVersion p = installed;
    if (p == null) {
      return torn;
    }
    try {
      reinstall(p);
      LOG.warn(
          "{}: version of step {} tore the live weights; restored version '{}' (step {})",
          holder,
          torn.step(),
          p.version().id(),
          p.version().step());
      return torn.restoredTo(p.version().step());
    } catch (RuntimeException again) {
      torn.addSuppressed(again);
      return torn;
    }
  }

  /**
   * Runs a held version's refit again, under its lease (a torn install's restore, or a {@link
   * #rollback}). A publisher of it that was killed meanwhile is read as it left its memory where
   * the transport can ({@link Transport#readAfterExit}: same-host shared memory): the lease kept
   * that buffer set from being rewritten, and the receiver verifies what it reads against the
   * digests of the version's tables as on any refit (every byte with {@code --verify all}).
   */
  private void reinstall(HeldVersion h) {
    LeaseKeeper before = currentLease;
    Set<String> sessions = transport == null ? Set.of() : h.sources().peerMetadata().keySet();
    try {
      currentLease = h.lease();
      h.lease().check();
      current = h.sources();
      sessions.forEach(s -> transport.readAfterExit(s, true));
      receiverFor(fingerprint(h.sources().sources())).updateWeights(h.version().step());
    } finally {
      sessions.forEach(s -> transport.readAfterExit(s, false));
      currentLease = before;
    }
  }

  /**
   * With {@link Builder#holdUntilCommit}: every rank installed the last version, so the one before
   * it is no longer needed to roll back; its lease goes (its publishers may reuse that memory).
   */
  public synchronized void commit() {
    release(previous);
    previous = null;
  }

  /**
   * With {@link Builder#holdUntilCommit}: another rank failed the last version, so this rank puts
   * back the version before it (still leased, read again and verified) and drops the last one.
   *
   * @return the step now installed
   * @throws IllegalStateException when no earlier version is held
   * @throws RuntimeException from the re-install (the live weights are torn then)
   */
  public synchronized long rollback() {
    HeldVersion p = previous;
    if (p == null) {
      throw new IllegalStateException(
          holder + ": no earlier version of '" + model + "' is held to roll back to");
    }
    reinstall(p);
    release(installed);
    installed = p;
    previous = null;
    lastStep = p.version().step();
    lastVersion = p.version().id();
    return p.version().step();
  }

  private static void release(HeldVersion h) {
    if (h != null) {
      h.lease().close();
    }
  }

  /**
   * What an install read, one per geometry a receiver was prepared for (publishers with two buffer
   * sets alternate between two): its sources, its version's slots and tables, and the slots whose
   * tables its plan needs. A version with the same slots fetches only those tables where the store
   * fetches tables from their publishers; the others stand in from the install whose geometry the
   * fresh ones match (the plan reads nothing of them). No match: the rest are fetched too.
   */
  private record LastTables(
      Map<String, SourceInfo> sources,
      List<String> slots,
      Map<String, ShardTable> bySlot,
      Set<String> read) {}

  /** By receiver fingerprint, at most {@link #maxReceivers} (guarded by this). */
  private final Map<String, LastTables> lastTables = new LinkedHashMap<>();

  /** The tables {@link #fetch} returned last, by slot: what {@link #remember} keeps. */
  private volatile Map<String, ShardTable> fetchedTables = Map.of();

  /** How many of those {@link #fetch} fetched (the others stood in from an earlier version). */
  private volatile int tablesFetched;

  /**
   * The version's tables, each checked against its advertised SHA-256 and step, merged into
   * sources. Read under the lease, so the tables cannot change underneath.
   */
  private DiscoveredSources fetch(WeightVersion v) {
    List<LastTables> candidates;
    synchronized (this) {
      candidates =
          lastTables.values().stream().filter(l -> l.slots().equals(v.expectedSlots())).toList();
    }
    Set<String> read = new TreeSet<>();
    candidates.forEach(l -> read.addAll(l.read()));
    if (candidates.isEmpty()
        || !versions.fetchesTablesSelectively()
        || read.containsAll(v.expectedSlots())) {
      return merged(v, fetchTables(v, null), null);
    }
    Map<String, ShardTable> fresh = fetchTables(v, read);
    for (LastTables l : candidates) {
      DiscoveredSources m = merged(v, fresh, l);
      if (SourceChecks.sameGeometry(l.sources(), m.sources())) {
        return m;
      }
    }
    LOG.debug(
        "{}: the tables its plan reads match no prepared geometry in version '{}': fetching the"
            + " rest",
        holder,
        v.id());
    Set<String> rest = new TreeSet<>(v.expectedSlots());
    rest.removeAll(read);
    Map<String, ShardTable> all = new TreeMap<>(fresh);
    all.putAll(fetchTables(v, rest));
    return merged(v, all, null);
  }

  /** Every expected slot's table: fetched, or from {@code standIns}. */
  private DiscoveredSources merged(
      WeightVersion v, Map<String, ShardTable> fetched, LastTables standIns) {
    Map<String, ShardTable> tables = new TreeMap<>(fetched);
    List<ShardTable> all = new ArrayList<>(v.expectedSlots().size());
    for (String slot : v.expectedSlots()) {
      ShardTable t = tables.get(slot);
      if (t == null) {
        ShardTable before = standIns.bySlot().get(slot);
        t = standIn(before, before.publisherStep() == null ? null : v.step());
        tables.put(slot, t);
      }
      all.add(t);
    }
    fetchedTables = tables;
    tablesFetched = fetched.size();
    return StoreDiscovery.merge(all, null);
  }

  /**
   * The tables of the version's slots in {@code only} (null: every expected slot), each checked
   * against its advertised SHA-256 and step, by slot.
   */
  private Map<String, ShardTable> fetchTables(WeightVersion v, Set<String> only) {
    List<VersionSlot> slots =
        only == null ? versions.slots(model, v.id()) : versions.slots(model, v.id(), only);
    Map<String, VersionSlot> bySlot = new TreeMap<>();
    slots.forEach(s -> bySlot.put(s.slot(), s));
    List<VersionSlot> inOrder = new ArrayList<>();
    for (String expected : v.expectedSlots()) {
      if (only != null && !only.contains(expected)) {
        continue;
      }
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
      requireReadableTransport(v, s);
      inOrder.add(s);
    }
    // Checking each table's SHA-256 and decoding it are most of a fetch at scale: every core.
    List<ShardTable> decoded =
        ParallelMap.inOrder(inOrder, s -> codec.decode(s.verified(model).table()));
    SlotRanks ranks = new SlotRanks(expectation, storeUri);
    Map<String, ShardTable> out = new TreeMap<>();
    for (int i = 0; i < decoded.size(); i++) {
      VersionSlot s = inOrder.get(i);
      String expected = s.slot();
      ShardTable t = decoded.get(i);
      // As plain discovery refuses a publisher outside the job or claiming another's rank.
      ranks.require(
          t,
          expected,
          "publisher '" + s.workerId() + "' (slot '" + expected + "' of version '" + v.id() + "')");
      // A table without a step (ModelExpress's trainer adapters write none) is bound to this
      // version by the SHA-256 its slot advertises, checked above; one naming a step must agree.
      if (t.publisherStep() != null && t.publisherStep() != v.step()) {
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
      out.put(expected, t);
    }
    return out;
  }

  /**
   * The last version's table of a slot the plan does not read, standing in for this version's: its
   * geometry, bound to {@code step}, without its (last step's) shard digests, so that they are
   * neither compared with the fresh tables' replicas nor read.
   */
  private static ShardTable standIn(ShardTable t, Long step) {
    UnaryOperator<PublishedShard> noDigest =
        p ->
            new PublishedShard(
                p.agentName(),
                p.deviceId(),
                p.addr(),
                p.shardOffset(),
                p.shape(),
                null,
                p.tiles(),
                p.changedStep());
    List<PublishedTensor> tensors = new ArrayList<>(t.tensors().size());
    for (PublishedTensor pt : t.tensors()) {
      tensors.add(
          new PublishedTensor(
              pt.name(),
              pt.dtype(),
              pt.elsize(),
              pt.fullShape(),
              pt.shards().stream().map(noDigest).toList()));
    }
    List<ReplicaShard> replicas = new ArrayList<>(t.replicas().size());
    for (ReplicaShard r : t.replicas()) {
      replicas.add(new ReplicaShard(r.tensor(), noDigest.apply(r.shard())));
    }
    return new ShardTable(
        t.agentName(),
        t.metadataEndpoint(),
        t.agentMetadata(),
        tensors,
        step,
        t.topology(),
        replicas);
  }

  /**
   * The slots whose tables a plan reading from {@code sessions} needs: those of the sessions it
   * reads, and those that own a box it may read from a replica (a replica is read with its owner's
   * tile digests, and checked against the owner's digest).
   */
  static Set<String> slotsRead(Map<String, ShardTable> bySlot, Set<String> sessions) {
    Map<String, String> ownerOfBox = new HashMap<>();
    bySlot.forEach(
        (slot, t) -> {
          for (PublishedTensor pt : t.tensors()) {
            for (PublishedShard sh : pt.shards()) {
              ownerOfBox.putIfAbsent(boxKey(pt.name(), sh), slot);
            }
          }
        });
    Set<String> read = new TreeSet<>();
    bySlot.forEach(
        (slot, t) -> {
          if (sessions.contains(t.agentName())) {
            read.add(slot);
            for (ReplicaShard r : t.replicas()) {
              String owner = ownerOfBox.get(boxKey(r.tensor(), r.shard()));
              if (owner != null) {
                read.add(owner);
              }
            }
          }
        });
    return read;
  }

  private static String boxKey(String tensor, PublishedShard s) {
    return tensor + Arrays.toString(s.shardOffset()) + s.shape();
  }

  /**
   * After an install: which slots' tables {@code receiver}'s plan needs, kept for its geometry, so
   * that the next version with the same slots fetches only those ({@link
   * WeightVersionStore#preferSlots} tells the store, which may fetch them early).
   */
  private void remember(
      WeightVersion v, String geometry, DiscoveredSources sources, Receiver receiver) {
    Map<String, ShardTable> tables = fetchedTables;
    Set<String> sessions = receiver.plannedSessions();
    if (sessions.isEmpty() || tables.size() != v.expectedSlots().size()) {
      forget();
      return;
    }
    Set<String> read = slotsRead(tables, sessions);
    Set<String> wanted = new TreeSet<>();
    synchronized (this) {
      lastTables.put(geometry, new LastTables(sources.sources(), v.expectedSlots(), tables, read));
      while (lastTables.size() > maxReceivers) {
        lastTables.remove(lastTables.keySet().iterator().next());
      }
      lastTables.values().forEach(l -> wanted.addAll(l.read()));
    }
    versions.preferSlots(model, wanted.containsAll(v.expectedSlots()) ? null : wanted);
  }

  /** The next version fetches every table. */
  private void forget() {
    synchronized (this) {
      lastTables.clear();
    }
    versions.preferSlots(model, null);
  }

  /**
   * Refuses, before anything is leased further or read, a slot whose publisher declared a transport
   * this receiver does not read through: its agent metadata is for that transport only (a
   * ModelExpress trainer's record says {@code NIXL}, its manifest's {@code agent_meta_b64} being
   * NIXL's agent metadata, which mx's {@code nixl} transport loads). Names match ignoring case; a
   * receiver routing over several transports reads a slot any of them reads.
   */
  private void requireReadableTransport(WeightVersion v, VersionSlot s) {
    if (transport == null || s.transport() == null || s.transport().isEmpty()) {
      return;
    }
    for (String mine : transport.name().split("\\+")) {
      if (mine.equalsIgnoreCase(s.transport())) {
        return;
      }
    }
    throw new WeightVersionException(
        WeightVersionException.Reason.CONFLICT,
        "slot '"
            + s.slot()
            + "' of version '"
            + v.id()
            + "' was published over "
            + s.transport()
            + " by worker '"
            + s.workerId()
            + "': its agent metadata is for that transport, and this receiver reads over "
            + transport.name()
            + " (read it with the '"
            + s.transport().toLowerCase(java.util.Locale.ROOT)
            + "' transport)");
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

  /** The receiver prepared for the geometry {@code key} ({@link #fingerprint}), made if new. */
  private Receiver receiverFor(String key) {
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
          // Digests and last-changed steps move with the content, not the geometry.
          .map(x -> x.withDigest(null).withChangedStep(null).toString())
          .sorted()
          .forEach(x -> sb.append(x).append(';'));
      sb.append('\n');
    }
    return sb.toString();
  }

  /** The failure of a wait; {@code cap} is the overall cap that passed, null when none did. */
  private NoReadableVersionException noVersion(
      Duration cap, Map<String, String> failures, RuntimeException last) {
    StringBuilder sb =
        new StringBuilder(
            holder
                + ": no version of '"
                + model
                + "' newer than "
                + (lastStep == null ? "none" : "step " + lastStep)
                + " could be installed"
                + (cap == null ? "" : " within the cap of " + cap.toMillis() + " ms"));
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
    release(previous);
    release(installed);
    previous = null;
    installed = null;
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
    private Duration stallLimit = ProgressSettings.stallLimit(Settings.system());
    private Selection selection = Selection.NEXT;
    private int maxAttempts = 2;
    private int maxReceivers = 2;
    private Installer installer;
    private ReceiverFactory factory;
    private Long afterStep;
    private Discovery.Expectation expectation;
    private Transport transport;
    private boolean restorePrevious;
    private boolean holdUntilCommit;

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

    /**
     * How long a trainer rank waited on may make no progress before the wait fails (default {@code
     * mx.stall-limit}, 60 s).
     */
    public Builder stallLimit(Duration d) {
      this.stallLimit = Objects.requireNonNull(d, "stallLimit");
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

    /**
     * Keep the installed version leased until the next one installed, so that an in-place install
     * that fails part-way ({@link TornInstallException}) is restored from it: the receiver of that
     * version reads it again and verifies it (default off). Needs publishers with two buffer sets:
     * a one-set publisher cannot write the next version while this lease holds its memory.
     */
    public Builder restorePrevious(boolean on) {
      this.restorePrevious = on;
      return this;
    }

    /**
     * With {@link #restorePrevious}: also keep the version before the installed one leased until
     * {@link VersionFollower#commit()}, so that a job committing each step across ranks can {@link
     * VersionFollower#rollback()} a rank that installed it when another rank failed (default off).
     */
    public Builder holdUntilCommit(boolean on) {
      this.holdUntilCommit = on;
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
          || pollInterval.isZero()
          || !stallLimit.isPositive()) {
        throw new IllegalArgumentException(
            "lease TTL, poll interval and stall limit must be positive");
      }
      if (holdUntilCommit && !restorePrevious) {
        throw new IllegalArgumentException("holdUntilCommit needs restorePrevious");
      }
      store.versions(); // fails now, naming the store, when it keeps no versions
      return new VersionFollower(this);
    }
  }
}
