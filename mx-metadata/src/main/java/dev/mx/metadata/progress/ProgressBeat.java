package dev.mx.metadata.progress;

import dev.mx.api.annotation.Internal;
import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.SourceRecord;
import dev.mx.api.metadata.SourceStatus;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The heartbeat of one party others wait on (a trainer rank): a record in {@link PartyRecords}
 * rewritten every period on a daemon thread with a progress counter and a phase.
 *
 * <p>The counter advances in one of two modes. {@link #working} is for work mx itself does in steps
 * (digesting shards): only {@link #advance} moves the counter, so a thread wedged inside the work
 * stops it although the heartbeat thread runs on. {@link #waiting} is for time that is idle by
 * design (waiting for peers or for leases — waits that are themselves bounded by the liveness of
 * whom they wait on —, the trainer's own writer, training between steps): every beat moves the
 * counter, so the party counts as progressing while its process runs. Either way a stopped
 * (SIGSTOP) or killed process stops the counter, and its waiters fail after their stall limit
 * naming it and its last phase.
 *
 * <p>Store failures are logged once and retried every period; a record the store lost is written
 * again. {@link #close()} stops the beats and marks the record STALE (best effort); idempotent.
 */
@Internal
public final class ProgressBeat implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ProgressBeat.class);

  private final MetadataStore store;
  private final String identity;
  private final String party;
  private final int rank;
  private final String label;
  private final ScheduledExecutorService beats;
  private final AtomicBoolean closed = new AtomicBoolean();
  private final Object lock = new Object();
  private long progress;
  private String phase;
  private boolean idle = true;
  private boolean failing;

  private ProgressBeat(
      MetadataStore store, String model, String party, int rank, String label, String phase) {
    this.store = store;
    this.identity = PartyRecords.identity(model);
    this.party = party;
    this.rank = rank;
    this.label = label;
    this.phase = phase;
    this.beats =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "mx-progress-" + party);
              t.setDaemon(true);
              return t;
            });
  }

  /**
   * Writes the party's record, beats once now and then every {@code period}; the party starts
   * {@link #waiting} in {@code phase}.
   *
   * @param party the name waiters know the party by (a trainer rank's slot)
   * @param label how messages name it ("rank slot 2 (worker trainer-2)")
   */
  public static ProgressBeat start(
      MetadataStore store,
      String model,
      String party,
      int rank,
      String label,
      String phase,
      Duration period) {
    Objects.requireNonNull(store, "store");
    if (!period.isPositive()) {
      throw new IllegalArgumentException("heartbeat period must be positive, got " + period);
    }
    ProgressBeat b = new ProgressBeat(store, model, party, rank, label, phase);
    b.beat();
    long nanos = period.toNanos();
    b.beats.scheduleWithFixedDelay(b::beat, nanos, nanos, TimeUnit.NANOSECONDS);
    return b;
  }

  /** Idle by design from now on, in {@code newPhase}: every beat advances the counter. */
  public void waiting(String newPhase) {
    synchronized (lock) {
      idle = true;
      phase = newPhase;
      progress++;
    }
  }

  /** Doing stepwise work from now on, in {@code newPhase}: only {@link #advance} moves on. */
  public void working(String newPhase) {
    synchronized (lock) {
      idle = false;
      phase = newPhase;
      progress++;
    }
  }

  /** One step of progress, now in {@code newPhase}; sent with the next beat. */
  public void advance(String newPhase) {
    synchronized (lock) {
      phase = newPhase;
      progress++;
    }
  }

  /** The phase as of now. */
  public String phase() {
    synchronized (lock) {
      return phase;
    }
  }

  /** The counter as of now. */
  public long progress() {
    synchronized (lock) {
      return progress;
    }
  }

  private void beat() {
    long p;
    String ph;
    synchronized (lock) {
      if (idle) {
        progress++;
      }
      p = progress;
      ph = phase;
    }
    try {
      try {
        store.heartbeat(identity, party, SourceStatus.READY, p, ph);
      } catch (RuntimeException lost) {
        if (store.get(identity, party).isPresent()) {
          throw lost;
        }
        // First beat, or the store lost the record (a Redis restarted empty): write it again.
        store.publish(
            new SourceRecord(
                identity, party, rank, PartyRecords.blob(label), SourceStatus.READY, 0, p, ph));
        store.heartbeat(identity, party, SourceStatus.READY, p, ph);
      }
      if (failing) {
        LOG.info("{}: progress heartbeats reach {} again", label, store.uri());
      }
      failing = false;
    } catch (RuntimeException e) {
      if (!failing) {
        LOG.warn(
            "{}: progress heartbeat to {} failed, retrying every period: {}",
            label,
            store.uri(),
            e.toString());
      }
      failing = true;
    }
  }

  /** Stops the beats and marks the record STALE (best effort). */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    beats.shutdownNow();
    try {
      beats.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    try {
      store.heartbeat(identity, party, SourceStatus.STALE, progress() + 1, "stopped");
    } catch (RuntimeException e) {
      LOG.debug("{}: could not mark its progress record STALE: {}", label, e.toString());
    }
  }
}
