package dev.mx.refit.version;

import dev.mx.api.annotation.Stable;
import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.Reclaim;
import dev.mx.api.metadata.VersionLease;
import dev.mx.api.metadata.VersionSlot;
import dev.mx.api.metadata.WeightVersion;
import dev.mx.api.metadata.WeightVersionException;
import dev.mx.api.metadata.WeightVersionState;
import dev.mx.api.metadata.WeightVersionStore;
import dev.mx.api.metrics.RefitListener;
import dev.mx.api.metrics.RefitListeners;
import dev.mx.api.transport.Transport;
import dev.mx.api.util.Closeables;
import dev.mx.api.util.Settings;
import dev.mx.metadata.ShardTableCodec;
import dev.mx.metadata.progress.PartyRecords;
import dev.mx.metadata.progress.ProgressBeat;
import dev.mx.metadata.progress.ProgressSettings;
import dev.mx.metadata.progress.StallWatch;
import dev.mx.metadata.progress.StalledPartyException;
import dev.mx.refit.publish.Publisher;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import java.util.function.IntConsumer;
import java.util.function.LongFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One trainer rank publishing every step as a weight version (docs/VERSIONS.md). It keeps one or
 * two buffer sets, each served by its own {@link Publisher}; {@link #publish(long, IntConsumer)}
 * picks the set that does not hold the newest version it published (with one set: that set), gets
 * that set's memory back (release the old version, then reclaim its slot once no lease is live — an
 * expired lease of a dead receiver frees it after its TTL), lets the trainer write the step into
 * it, republishes the set's table (fresh digests) and lands it as this rank's slot of the step's
 * version. With two sets the newest version is never overwritten and training can write step N+1
 * while receivers read step N; with one set (a trainer publishing its own buffers, zero-copy, at
 * the cost of that overlap) the next step waits until every reader of the last one released it.
 *
 * <p>Its waits are liveness-based (docs/VERSIONS.md, "Waiting on liveness"): it waits for the other
 * set's leases while they are live (a receiver that dies or stops stops renewing, and its lease
 * expires after its TTL), and for the other ranks' slots while those ranks heartbeat with progress,
 * going on without a rank that stalled for the {@link Builder#stallLimit}. Only when {@link
 * Builder#leaseWait} sets an overall cap and the other set is still leased after it does the call
 * fail with {@link BuffersLeasedException} naming the version and the leaseholders, and nothing was
 * written: the trainer may retry (the step is still its to publish) or give up.
 *
 * <p>The rank heartbeats its own progress ({@link ProgressBeat}, under {@link PartyRecords}) from
 * {@link Builder#start} to {@link #close}, so that receivers waiting for its slot wait while it
 * works and fail, naming it and its phase, once it stops: "writing step 3", "digesting step 3,
 * 12/40 shards", "waiting for leases on 'step-1' held by [receiver-0]", "idle after step 3".
 *
 * <p>A JVM shutdown hook (SIGTERM, SIGINT, {@code System.exit}) marks this rank's slots STALE, then
 * its buffer sets' shard tables ({@link Publisher#withdraw()}), within a second so receivers skip
 * its versions instead of reading from a dead peer; {@link #close()} does the same, then closes
 * both publishers (which deregister their memory). The caller owns the transport, the store and the
 * memory.
 */
@Stable
public final class VersionedPublisher implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(VersionedPublisher.class);

  /** How long the shutdown hook waits for the store to take the STALE marks. */
  static final Duration SHUTDOWN_BUDGET = Duration.ofMillis(900);

  private final WeightVersionStore versions;
  private final String model;
  private final String slot;
  private final String workerId;
  private final List<String> expectedSlots;
  private final Duration leaseWait;
  private final Duration stallLimit;
  private final MetadataStore store;
  private final ProgressBeat beat;
  private final Duration pollInterval;
  private final LongFunction<String> versionIds;

  /**
   * Whether deregistering is a fence for readers (see {@link #awaitReadersBeforeDeregistering}).
   */
  private final boolean transportRevokes;

  /** Each set's publisher, started when the set is first written (null before). */
  private final Publisher[] sets;

  /** Each set's publisher settings, until it starts. */
  private final Publisher.Builder[] pending;

  private final String[] held;

  /** The table and step each set's slot was landed with, to land it again if the store loses it. */
  private final byte[][] tables;

  private final long[] steps;
  private final ShardTableCodec codec = ShardTableCodec.standard();
  private final AtomicBoolean closed = new AtomicBoolean();
  private final Thread shutdownHook;
  private int newest = -1;
  private volatile boolean stopping;
  private volatile String digestPhase = "digesting";

  private VersionedPublisher(Builder b, Publisher.Builder[] pending) {
    this.versions = b.store.versions();
    this.model = b.model;
    this.slot = b.slot;
    this.workerId = b.workerId;
    this.expectedSlots = List.copyOf(b.expectedSlots);
    this.leaseWait = b.leaseWait;
    this.stallLimit = b.stallLimit;
    this.store = b.store;
    this.pollInterval = b.pollInterval;
    this.versionIds = b.versionIds;
    this.transportRevokes = b.transport.revokesDeregisteredMemory();
    this.pending = pending;
    this.sets = new Publisher[pending.length];
    this.held = new String[pending.length];
    this.tables = new byte[pending.length][];
    this.steps = new long[pending.length];
    this.beat =
        ProgressBeat.start(
            b.store,
            b.model,
            b.slot,
            b.rank,
            "rank slot " + b.slot + " (worker " + b.workerId + ")",
            "started, no step published yet",
            b.heartbeatPeriod);
    for (Publisher.Builder set : pending) {
      set.digestListener(this::digested);
    }
    this.shutdownHook =
        b.shutdownHook
            ? new Thread(this::markStaleWithinBudget, "mx-versions-shutdown-" + slot)
            : null;
  }

  public static Builder builder(Transport transport, MetadataStore store) {
    return new Builder(transport, store);
  }

  /**
   * The version id a step is published under, the same for every rank: {@code step-<N>} by default.
   */
  public String versionId(long step) {
    return versionIds.apply(step);
  }

  public String slot() {
    return slot;
  }

  public String workerId() {
    return workerId;
  }

  /**
   * Reports progress of the writer given to {@link #publish} ("writing step 3, 40 %"): the phase
   * receivers see while they wait for this rank's slot.
   */
  public void progress(String phase) {
    beat.advance(phase);
  }

  private void digested(int done, int total) {
    beat.advance(digestPhase + ", " + done + "/" + total + " shards");
  }

  /**
   * The versions whose memory this rank still holds, by buffer set (null where a set holds none).
   */
  public List<String> heldVersions() {
    synchronized (held) {
      List<String> out = new ArrayList<>(held.length);
      out.addAll(Arrays.asList(held));
      return out;
    }
  }

  /**
   * Publishes step {@code step}: frees the other buffer set, calls {@code writer} with its index (0
   * or 1) to fill it, and lands this rank's slot of version {@link #versionId(long)}.
   *
   * @return the version as of this rank's slot landing (READY when it was the last one)
   * @throws BuffersLeasedException when the set's old version stayed leased beyond the lease wait;
   *     nothing was written then
   * @throws RuntimeException from the store (e.g. Redis unreachable); the call may simply be
   *     repeated
   */
  public synchronized WeightVersion publish(long step, IntConsumer writer) {
    ensureOpen();
    RefitListener listener = RefitListeners.jvmWide();
    RefitListener.Publish what = new RefitListener.Publish(model, slot, step);
    long begun = System.nanoTime();
    long mark = begun;
    int set = nextSet();
    if (newest >= 0 && held[newest] != null) {
      // Lockstep: the other ranks land step N before this one writes N+1, so N is readable for a
      // whole interval.
      awaitPeers(newest);
      mark = timed(listener, what, "peers_wait_s", mark);
    }
    free(set);
    mark = timed(listener, what, "lease_wait_s", mark);
    beat.waiting("writing step " + step);
    writer.accept(set);
    mark = timed(listener, what, "write_s", mark);
    digestPhase = "digesting step " + step;
    beat.working(digestPhase);
    String id = versionId(step);
    versions.createVersion(model, id, step, expectedSlots);
    long slotNanos = System.nanoTime() - mark;
    mark = System.nanoTime();
    Publisher p = sets[set];
    if (p == null) {
      // First use of this set: its publisher starts now, digesting the step just written (not empty
      // memory).
      p = pending[set].step(step).start();
      pending[set] = null;
      synchronized (held) {
        sets[set] = p; // seen by the shutdown hook, which withdraws it
      }
    } else {
      p.republish(step);
    }
    byte[] table = codec.encode(p.table());
    mark = timed(listener, what, "digest_s", mark);
    WeightVersion v = versions.publishSlot(model, VersionSlot.of(id, slot, workerId, table));
    listener.publishStageTimed(what, "slot_s", (slotNanos + System.nanoTime() - mark) / 1e9);
    listener.published(what, (System.nanoTime() - begun) / 1e9, v.state().name());
    tables[set] = table;
    steps[set] = step;
    // Only a landed slot is held: a publish that failed (the store unreachable) can be retried on
    // the same set.
    synchronized (held) {
      held[set] = id;
    }
    newest = set;
    beat.waiting(
        "published step "
            + step
            + " as '"
            + id
            + "' ("
            + v.state()
            + "); idle until the next step");
    if (stopping) {
      // The shutdown hook ran while the slot was landing: it must not outlive this process as
      // READY.
      markStale();
    }
    LOG.info(
        "rank slot {} published step {} as version '{}' from buffer set {} ({})",
        slot,
        step,
        id,
        set,
        v.state());
    return v;
  }

  /**
   * Gets back, now, the buffer set the next {@link #publish} writes, as {@code publish} would: once
   * the other ranks landed the newest version, releases the set's old version (receivers no longer
   * pick it) and waits until no reader leases it. For a rank whose memory is written before it
   * publishes by someone else (an engine's installed weights, which a refit writes in place):
   * reclaim, let it write, then publish, which then does not wait again. Returns that set.
   *
   * @throws BuffersLeasedException as {@link #publish}; the set may not be written then
   */
  public synchronized int reclaim() {
    ensureOpen();
    int set = nextSet();
    if (newest >= 0 && held[newest] != null) {
      awaitPeers(newest);
    }
    free(set);
    return set;
  }

  /** The set the next publish writes: the one that does not hold the newest version. */
  private int nextSet() {
    return newest < 0 ? 0 : (newest + 1) % sets.length;
  }

  /** Tells {@code listener} that {@code stage} ran from {@code since} until now; returns now. */
  private static long timed(
      RefitListener listener, RefitListener.Publish what, String stage, long since) {
    long now = System.nanoTime();
    listener.publishStageTimed(what, stage, (now - since) / 1e9);
    return now;
  }

  /**
   * The publisher serving buffer set {@code set}, for its table and status; null until the set was
   * first written.
   */
  public synchronized Publisher publisher(int set) {
    return sets[set];
  }

  /** Releases the version set {@code set} holds and waits until its slot is reclaimed. */
  private void free(int set) {
    String old = held[set];
    if (old == null) {
      return;
    }
    awaitOtherSlots(old);
    try {
      versions.release(model, old);
    } catch (WeightVersionException e) {
      if (e.reason() != WeightVersionException.Reason.NOT_FOUND) {
        throw e;
      }
    }
    long started = System.nanoTime();
    Reclaim r = versions.reclaim(model, old, slot, workerId);
    List<String> waitedOn = null;
    while (!r.granted()) {
      if (!r.holders().equals(waitedOn)) {
        waitedOn = r.holders();
        beat.waiting("waiting for leases on '" + old + "' held by " + waitedOn);
      }
      if (capPassed(started)) {
        throw new BuffersLeasedException(
            "rank slot "
                + slot
                + " of '"
                + model
                + "': cannot reuse buffer set "
                + set
                + ": version '"
                + old
                + "' is "
                + r.state()
                + " and still leased by "
                + r.holders()
                + " after the cap of "
                + leaseWait.toMillis()
                + " ms ("
                + (sets.length > 1
                    ? "the other set holds the newest version '"
                        + held[(set + 1) % sets.length]
                        + "', which is never overwritten"
                    : "this rank keeps one buffer set: the next version waits for every reader of"
                        + " the last one")
                + "); nothing was written",
            old,
            r.holders());
      }
      sleep(pollInterval);
      r = versions.reclaim(model, old, slot, workerId);
    }
    synchronized (held) {
      held[set] = null;
    }
  }

  /**
   * Waits, at most the lease wait, while the newest version (in set {@code set}) is still STAGING
   * with no STALE slot. When the store lost it or this rank's slot of it (a Redis restarted empty),
   * the slot is landed again first: the memory still holds that step, so receivers can have it.
   */
  private void awaitPeers(int set) {
    String id = held[set];
    long started = System.nanoTime();
    StallWatch peers = new StallWatch(stallLimit);
    beat.waiting("waiting for the other ranks to land step " + steps[set]);
    while (true) {
      Optional<WeightVersion> v = versions.version(model, id);
      if (v.isEmpty()
          || (v.get().state() != WeightVersionState.RELEASING
              && !v.get().slots().containsKey(slot))) {
        versions.createVersion(model, id, steps[set], expectedSlots);
        v =
            Optional.of(
                versions.publishSlot(model, VersionSlot.of(id, slot, workerId, tables[set])));
        LOG.info(
            "rank slot {} of '{}': the store had lost version '{}'; landed its slot again",
            slot,
            model,
            id);
      }
      if (v.get().state() != WeightVersionState.STAGING
          || !v.get().staleSlots().isEmpty()
          || othersMovedPast(steps[set])) {
        return;
      }
      String stalled = stalledPeer(peers, v.get(), started);
      if (stalled != null) {
        LOG.warn(
            "rank slot {} of '{}': going on without {}: {}",
            slot,
            model,
            v.get().describe(),
            stalled);
        return;
      }
      sleep(pollInterval);
    }
  }

  /**
   * Why the missing slots of {@code v} will not land (a peer stalled, or the cap passed), or null
   * while they may.
   */
  private String stalledPeer(StallWatch peers, WeightVersion v, long started) {
    if (capPassed(started)) {
      return "its other slots did not land within the cap of " + leaseWait.toMillis() + " ms";
    }
    peers.sample(() -> PartyRecords.list(store, model));
    try {
      peers.check(v.missingSlots());
      return null;
    } catch (StalledPartyException e) {
      return e.getMessage();
    }
  }

  /** Whether the overall cap ({@link Builder#leaseWait}), if any, passed since {@code started}. */
  private boolean capPassed(long started) {
    return leaseWait != null && System.nanoTime() - started - leaseWait.toNanos() > 0;
  }

  /**
   * Waits, at most the lease wait, while version {@code id} is still STAGING with no STALE slot:
   * the other ranks may still be landing theirs. A version a peer really abandoned is given up
   * after the wait (logged).
   */
  private void awaitOtherSlots(String id) {
    long started = System.nanoTime();
    StallWatch peers = new StallWatch(stallLimit);
    Optional<WeightVersion> v = versions.version(model, id);
    if (v.isPresent()) {
      beat.waiting("waiting for the other ranks to land step " + v.get().step());
    }
    while (v.isPresent()
        && v.get().state() == WeightVersionState.STAGING
        && v.get().staleSlots().isEmpty()
        && !othersMovedPast(v.get().step())) {
      String stalled = stalledPeer(peers, v.get(), started);
      if (stalled != null) {
        LOG.warn(
            "rank slot {} of '{}': abandoning {}: {}", slot, model, v.get().describe(), stalled);
        return;
      }
      sleep(pollInterval);
      v = versions.version(model, id);
    }
  }

  /**
   * Whether another rank landed a slot of a version newer than {@code step}. It passed that step,
   * which ranks do only once every rank landed it (or after the lease wait), so a version of that
   * step still STAGING (one re-landed after the store lost it, e.g. a Redis restarted just as a
   * peer moved on) will not complete: it is not waited for.
   */
  private boolean othersMovedPast(long step) {
    for (WeightVersion v : versions.versions(model)) {
      if (v.step() > step && v.slots().keySet().stream().anyMatch(s -> !s.equals(slot))) {
        return true;
      }
    }
    return false;
  }

  private static void sleep(Duration d) {
    try {
      TimeUnit.NANOSECONDS.sleep(d.toNanos());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while waiting for leases to end", e);
    }
  }

  /**
   * Marks every slot this rank holds STALE, then each buffer set's shard table (its {@code .state}
   * on a {@code file:} store) too; best effort, each failure logged.
   */
  void markStale() {
    String[] ids;
    Publisher[] started;
    synchronized (held) {
      ids = held.clone();
      started = sets.clone();
    }
    for (String id : ids) {
      if (id == null) {
        continue;
      }
      try {
        versions.markSlotStale(model, id, slot, workerId);
      } catch (RuntimeException e) {
        LOG.warn(
            "rank slot {} could not mark its slot of version '{}' STALE: {}",
            slot,
            id,
            e.toString());
      }
    }
    // A READY table of a gone process would still be listed by plain discovery of the buffer set.
    for (Publisher p : started) {
      if (p != null) {
        p.withdraw();
      }
    }
  }

  /**
   * The shutdown hook's body: STALE marks on a daemon thread, waited for at most {@link
   * #SHUTDOWN_BUDGET}.
   */
  private void markStaleWithinBudget() {
    stopping = true;
    Thread t =
        new Thread(
            () -> {
              markStale();
              beat.close();
            },
            "mx-versions-stale-" + slot);
    t.setDaemon(true);
    t.start();
    try {
      t.join(SHUTDOWN_BUDGET.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (t.isAlive()) {
      LOG.warn(
          "rank slot {}: the store did not take the STALE marks within {} ms; its versions go stale with the"
              + " store's GC instead",
          slot,
          SHUTDOWN_BUDGET.toMillis());
    }
  }

  private void ensureOpen() {
    if (closed.get()) {
      throw new IllegalStateException(
          "versioned publisher of slot " + slot + " of '" + model + "' is closed");
    }
  }

  /**
   * Over a transport that cannot revoke deregistered memory, keeps the registrations (and the
   * bytes: nothing writes them any more) until no receiver holds a lease on a version this rank
   * holds: releases each (no new lease) and waits, at most the lease wait, until its live leases
   * are dropped or expired. A receiver that read such a version confirms its lease and slots with
   * the store before installing, so one still reading when the wait gives up installs nothing.
   */
  private void awaitReadersBeforeDeregistering() {
    if (transportRevokes) {
      return;
    }
    String[] ids;
    synchronized (held) {
      ids = held.clone();
    }
    long deadline = System.nanoTime() + leaseWait.toNanos();
    for (String id : ids) {
      if (id == null) {
        continue;
      }
      try {
        versions.release(model, id);
        List<VersionLease> leases = versions.leases(model, id);
        while (!leases.isEmpty()) {
          if (System.nanoTime() - deadline > 0) {
            LOG.warn(
                "rank slot {} of '{}': deregistering buffer memory of version '{}' while {} still"
                    + " lease it after {} ms (the transport cannot revoke it; their installs are"
                    + " refused)",
                slot,
                model,
                id,
                leases.stream().map(VersionLease::holder).toList(),
                leaseWait.toMillis());
            break;
          }
          sleep(pollInterval);
          leases = versions.leases(model, id);
        }
      } catch (WeightVersionException e) {
        if (e.reason() != WeightVersionException.Reason.NOT_FOUND) {
          LOG.warn("rank slot {}: could not wait for readers of '{}': {}", slot, id, e.toString());
        }
      } catch (RuntimeException e) {
        LOG.warn("rank slot {}: could not wait for readers of '{}': {}", slot, id, e.toString());
      }
    }
  }

  /**
   * Marks this rank's slots STALE, waits for their readers when the transport cannot revoke
   * deregistered memory ({@link #awaitReadersBeforeDeregistering}), then closes both publishers in
   * reverse order; idempotent.
   */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    if (shutdownHook != null) {
      try {
        Runtime.getRuntime().removeShutdownHook(shutdownHook);
      } catch (IllegalStateException shuttingDown) {
        // The hook is running or about to: it marks the slots itself.
      }
    }
    List<AutoCloseable> steps = new ArrayList<>();
    steps.add(this::markStale);
    steps.add(this::awaitReadersBeforeDeregistering);
    steps.add(beat);
    for (int i = sets.length - 1; i >= 0; i--) {
      steps.add(sets[i]);
    }
    Closeables.closeAll(steps);
  }

  /** Settings and the buffer sets (one or two); {@link #start()} prepares their publishers. */
  public static final class Builder {
    private final Transport transport;
    private final MetadataStore store;
    private final List<Consumer<Publisher.Builder>> bufferSets = new ArrayList<>();
    private Consumer<Publisher.Builder> configure = b -> {};
    private String model;
    private String slot;
    private String workerId = UUID.randomUUID().toString();
    private int rank;
    private List<String> expectedSlots;
    private Duration leaseWait;
    private Duration stallLimit = ProgressSettings.stallLimit(Settings.system());
    private Duration heartbeatPeriod = ProgressSettings.heartbeatPeriod(Settings.system());
    private Duration pollInterval = Duration.ofMillis(50);
    private LongFunction<String> versionIds = step -> "step-" + step;
    private boolean shutdownHook = true;

    private Builder(Transport transport, MetadataStore store) {
      this.transport = Objects.requireNonNull(transport, "transport");
      this.store = Objects.requireNonNull(store, "store");
    }

    /** The model identity versions are kept under; receivers follow the same string. Required. */
    public Builder model(String m) {
      this.model = m;
      return this;
    }

    /** This rank's slot (e.g. its trainer rank as a string). Required. */
    public Builder slot(String s) {
      this.slot = s;
      return this;
    }

    /**
     * Every slot a version needs before it is READY (all trainer ranks). Required; must contain the
     * slot.
     */
    public Builder expectedSlots(List<String> slots) {
      this.expectedSlots = List.copyOf(slots);
      return this;
    }

    /** This process; a slot belongs to one worker. Defaults to a random UUID. */
    public Builder workerId(String id) {
      this.workerId = id;
      return this;
    }

    public Builder rank(int r) {
      this.rank = r;
      return this;
    }

    /**
     * Adds one buffer set: {@code tensors} adds its buffers, aliases or tensors to a {@link
     * Publisher.Builder} exactly as for a plain publisher. Call it twice, with the same tensors in
     * different memory.
     */
    public Builder bufferSet(Consumer<Publisher.Builder> tensors) {
      bufferSets.add(Objects.requireNonNull(tensors, "tensors"));
      return this;
    }

    /** Settings applied to both publishers (digests, heartbeat interval, device, endpoint). */
    public Builder configure(Consumer<Publisher.Builder> c) {
      this.configure = Objects.requireNonNull(c, "configure");
      return this;
    }

    /**
     * An overall cap on how long {@link #publish} waits for a leased buffer set or for the other
     * ranks' slots; null (the default) sets none: it waits while the leases are renewed and the
     * ranks progress.
     */
    public Builder leaseWait(Duration d) {
      this.leaseWait = d;
      return this;
    }

    /**
     * How long another rank may make no progress before this one stops waiting for its slot
     * (default {@code mx.stall-limit}, 60 s).
     */
    public Builder stallLimit(Duration d) {
      this.stallLimit = Objects.requireNonNull(d, "stallLimit");
      return this;
    }

    /** How often this rank heartbeats its progress (default {@code mx.heartbeat-period}, 2 s). */
    public Builder heartbeatPeriod(Duration d) {
      this.heartbeatPeriod = Objects.requireNonNull(d, "heartbeatPeriod");
      return this;
    }

    /** How often a blocked publish asks again (default 50 ms). */
    public Builder pollInterval(Duration d) {
      this.pollInterval = Objects.requireNonNull(d, "pollInterval");
      return this;
    }

    /** The version id of a step, the same function on every rank (default {@code step-<N>}). */
    public Builder versionIds(LongFunction<String> ids) {
      this.versionIds = Objects.requireNonNull(ids, "versionIds");
      return this;
    }

    /** Whether a JVM shutdown hook marks the slots STALE (default on). */
    public Builder shutdownHook(boolean on) {
      this.shutdownHook = on;
      return this;
    }

    /**
     * Makes the versioned publisher and installs the shutdown hook. Each buffer set's publisher
     * starts (registers what it must, digests, announces) when the set is first written, in {@link
     * #publish}.
     */
    public VersionedPublisher start() {
      if (model == null || model.isEmpty() || slot == null || slot.isEmpty()) {
        throw new IllegalArgumentException("a versioned publisher needs a model and a slot");
      }
      if (expectedSlots == null || !expectedSlots.contains(slot)) {
        throw new IllegalArgumentException(
            "slot '" + slot + "' must be one of the expected slots " + expectedSlots);
      }
      if (bufferSets.size() != 1 && bufferSets.size() != 2) {
        throw new IllegalArgumentException(
            "a versioned publisher needs one or two buffer sets, got " + bufferSets.size());
      }
      if ((leaseWait != null && leaseWait.isNegative())
          || !pollInterval.isPositive()
          || !stallLimit.isPositive()
          || !heartbeatPeriod.isPositive()) {
        throw new IllegalArgumentException(
            "lease wait must not be negative; poll interval, stall limit and heartbeat period must"
                + " be positive");
      }
      WeightVersionStore checked =
          store.versions(); // fails now, naming the store, when it keeps no versions
      Objects.requireNonNull(checked, "versions");
      Publisher.Builder[] pending = new Publisher.Builder[bufferSets.size()];
      for (int i = 0; i < pending.length; i++) {
        // Each set announces itself under its own identity so plain discovery of the model never
        // counts it.
        // It starts on the set's first write, so its first digests cover that step rather than
        // empty memory.
        Publisher.Builder b =
            Publisher.builder(transport, store)
                .identity(model + "#buffer-set-" + i)
                .workerId(workerId + "/set-" + i)
                .rank(rank);
        configure.accept(b);
        bufferSets.get(i).accept(b);
        pending[i] = b;
      }
      VersionedPublisher p = new VersionedPublisher(this, pending);
      if (p.shutdownHook != null) {
        Runtime.getRuntime().addShutdownHook(p.shutdownHook);
      }
      return p;
    }
  }
}
