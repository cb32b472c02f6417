package dev.mx.refit.version;

import dev.mx.api.annotation.Stable;
import dev.mx.api.metadata.VersionLease;
import dev.mx.api.metadata.WeightVersion;
import dev.mx.api.metadata.WeightVersionException;
import dev.mx.api.metadata.WeightVersionStore;
import dev.mx.api.metrics.RefitListener;
import dev.mx.api.metrics.RefitListeners;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Holds one lease on one version and renews it every third of its TTL on a daemon thread, as
 * ModelExpress's RL generator does (ARCHITECTURE §7.5). {@link #isHeld()} is judged conservatively
 * on this host's monotonic clock: the lease counts as held only until one TTL after the start of
 * the last renewal that succeeded, so a renewal thread that stalls (a GC pause, an unreachable
 * store) makes it "lost" before the store lets it expire. {@link #close()} stops renewing and drops
 * the lease (best effort; it expires anyway); it is idempotent.
 */
@Stable
public final class LeaseKeeper implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(LeaseKeeper.class);

  private final WeightVersionStore versions;
  private final String model;
  private final String versionId;
  private final String holder;
  private final Duration ttl;
  private final ScheduledExecutorService renewer;
  private final AtomicBoolean closed = new AtomicBoolean();
  private volatile long validUntilNanos;
  private volatile WeightVersionException lost;

  private LeaseKeeper(
      WeightVersionStore versions, String model, String versionId, String holder, Duration ttl) {
    this.versions = versions;
    this.model = model;
    this.versionId = versionId;
    this.holder = holder;
    this.ttl = ttl;
    this.renewer =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "mx-lease-" + holder + "-" + versionId);
              t.setDaemon(true);
              return t;
            });
  }

  /**
   * Takes the lease and starts renewing it.
   *
   * @throws WeightVersionException when the store refuses the lease (the version is not READY, or
   *     gone)
   */
  public static LeaseKeeper acquire(
      WeightVersionStore versions, String model, String versionId, String holder, Duration ttl) {
    LeaseKeeper k = new LeaseKeeper(versions, model, versionId, holder, ttl);
    long started = System.nanoTime();
    versions.acquireLease(model, versionId, holder, ttl);
    RefitListeners.jvmWide().lease(model, versionId, holder, RefitListener.LeaseAction.ACQUIRED);
    k.validUntilNanos = started + ttl.toNanos();
    long period = Math.max(1, ttl.toNanos() / 3);
    k.renewer.scheduleAtFixedRate(k::renew, period, period, TimeUnit.NANOSECONDS);
    return k;
  }

  private void renew() {
    if (lost != null || closed.get()) {
      return;
    }
    long started = System.nanoTime();
    try {
      VersionLease l = versions.renewLease(model, versionId, holder, ttl);
      validUntilNanos = started + ttl.toNanos();
      LOG.debug("lease of {} on {} renewed until {}", holder, versionId, l.expiresAtMillis());
    } catch (WeightVersionException e) {
      lost = e;
      RefitListeners.jvmWide().lease(model, versionId, holder, RefitListener.LeaseAction.LOST);
      LOG.warn(
          "lease of {} on version '{}' of '{}' is lost: {}",
          holder,
          versionId,
          model,
          e.getMessage());
    } catch (RuntimeException e) {
      // The store may be back by the next tick; the lease stays valid until its TTL runs out.
      LOG.warn(
          "lease of {} on version '{}': renewal failed, retrying: {}",
          holder,
          versionId,
          e.toString());
    }
  }

  public String versionId() {
    return versionId;
  }

  public String holder() {
    return holder;
  }

  /** Whether the lease is still known to be live. */
  public boolean isHeld() {
    return lost == null && !closed.get() && System.nanoTime() - validUntilNanos < 0;
  }

  /**
   * Fails unless the lease is still held, so nothing read under it is installed after it lapsed.
   *
   * @throws WeightVersionException LEASE_LOST naming the holder and version
   */
  public void check() {
    if (!isHeld()) {
      WeightVersionException e =
          new WeightVersionException(
              WeightVersionException.Reason.LEASE_LOST,
              "the lease of '"
                  + holder
                  + "' on version '"
                  + versionId
                  + "' of '"
                  + model
                  + "' lapsed while reading it (TTL "
                  + ttl
                  + "); its publishers may have reused the memory, so nothing read under it is installed");
      if (lost != null) {
        e.initCause(lost);
      }
      throw e;
    }
  }

  /**
   * Confirms with the store, after the reads, that what was read under this lease was served as
   * published: {@link #check()}, then a renewal there (the store renews only a live lease, so this
   * one never lapsed and no publisher reclaimed the version since it was taken), then every
   * expected slot of the version still READY (a publisher marks its slot STALE before it
   * deregisters). Needed over a transport that cannot revoke deregistered memory ({@link
   * dev.mx.api.transport.Transport#revokesDeregisteredMemory()} false), where a publisher that went
   * away mid-read would otherwise hand over whatever its memory held by then; the local check alone
   * cannot see that. A store that cannot be asked fails it too: nothing is installed on a guess.
   *
   * @throws WeightVersionException LEASE_LOST when the store no longer holds the lease, NOT_FOUND
   *     when the version is gone, WRONG_STATE naming the slots that went STALE or vanished
   */
  public void confirm() {
    check();
    long started = System.nanoTime();
    try {
      versions.renewLease(model, versionId, holder, ttl);
      validUntilNanos = started + ttl.toNanos();
    } catch (WeightVersionException e) {
      lost = e;
      RefitListeners.jvmWide().lease(model, versionId, holder, RefitListener.LeaseAction.LOST);
      throw new WeightVersionException(
          WeightVersionException.Reason.LEASE_LOST,
          "the store no longer holds the lease of '"
              + holder
              + "' on version '"
              + versionId
              + "' of '"
              + model
              + "' after its reads ("
              + e.getMessage()
              + "); its publishers may have reused the memory, so nothing read under it is"
              + " installed",
          e);
    }
    WeightVersion v =
        versions
            .version(model, versionId)
            .orElseThrow(
                () ->
                    new WeightVersionException(
                        WeightVersionException.Reason.NOT_FOUND,
                        "version '"
                            + versionId
                            + "' of '"
                            + model
                            + "' vanished while '"
                            + holder
                            + "' read it; nothing read is installed"));
    List<String> gone = new ArrayList<>(v.staleSlots());
    gone.addAll(v.missingSlots());
    if (!gone.isEmpty()) {
      throw new WeightVersionException(
          WeightVersionException.Reason.WRONG_STATE,
          "slot(s) "
              + gone
              + " of "
              + v.describe()
              + " went STALE or vanished while '"
              + holder
              + "' read it: over a transport that cannot revoke deregistered memory the bytes"
              + " may come from memory its publisher already gave up, so nothing read is"
              + " installed");
    }
  }

  /** Stops renewing and drops the lease. */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    renewer.shutdownNow();
    RefitListeners.jvmWide().lease(model, versionId, holder, RefitListener.LeaseAction.RELEASED);
    try {
      versions.dropLease(model, versionId, holder);
    } catch (RuntimeException e) {
      LOG.warn(
          "could not drop the lease of {} on version '{}' (it expires after {}): {}",
          holder,
          versionId,
          ttl,
          e.toString());
    }
  }
}
