package dev.mx.metadata.progress;

import dev.mx.api.annotation.Internal;
import dev.mx.api.metadata.SourceRecord;
import dev.mx.metadata.Ticker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Supplier;

/**
 * A waiter's view of the parties it waits on. It samples their heartbeat records and notes, on this
 * host's monotonic clock, when each one's progress last changed; a record without progress (an
 * older writer or store) counts as changed when its heartbeat time changes. Writers' clocks are
 * never compared with this one, so skewed hosts cannot fake or hide a stall.
 *
 * <p>{@link #check} fails with {@link StalledPartyException} when a party waited on has not changed
 * for the stall limit — whether its process was stopped, killed, wedged, or its record cannot be
 * read — or, once any party was seen, a party waited on never appeared within the stall limit.
 * While no party at all has been seen (publishers not started yet, or too old to heartbeat
 * progress) nothing fails here: an overall cap is the caller's. Not thread-safe: one waiter.
 */
@Internal
public final class StallWatch {
  private final Duration stallLimit;
  private final Ticker ticker;
  private final long sampleNanos;
  private final long createdNanos;
  private final Map<String, Seen> seen = new HashMap<>();
  private long firstSightingNanos;
  private boolean sighted;
  private long lastSampleNanos;
  private boolean sampled;
  private RuntimeException lastSampleFailure;

  /** What was last seen of one party, and when it last changed. */
  private record Seen(
      String label, long progress, long heartbeat, String phase, long changedNanos) {}

  public StallWatch(Duration stallLimit, Ticker ticker) {
    if (!stallLimit.isPositive()) {
      throw new IllegalArgumentException("stall limit must be positive, got " + stallLimit);
    }
    this.stallLimit = stallLimit;
    this.ticker = Objects.requireNonNull(ticker, "ticker");
    // Often enough to judge a stall to a tenth of the limit, rarely enough to leave the store
    // alone.
    this.sampleNanos = Math.min(stallLimit.toNanos() / 10, Duration.ofSeconds(1).toNanos());
    this.createdNanos = ticker.nanoTime();
  }

  public StallWatch(Duration stallLimit) {
    this(stallLimit, Ticker.system());
  }

  public Duration stallLimit() {
    return stallLimit;
  }

  /**
   * Samples the records from {@code lister} when a sample is due; a failing lister (the store
   * unreachable) leaves every party unchanged, and its failure is named if a stall follows.
   */
  public void sample(Supplier<? extends Collection<SourceRecord>> lister) {
    long now = ticker.nanoTime();
    if (sampled && now - lastSampleNanos < sampleNanos) {
      return;
    }
    sampled = true;
    lastSampleNanos = now;
    try {
      observe(lister.get());
      lastSampleFailure = null;
    } catch (RuntimeException e) {
      lastSampleFailure = e;
    }
  }

  /** Notes the records seen now, keyed by their worker id (the party's name). */
  public void observe(Collection<SourceRecord> records) {
    long now = ticker.nanoTime();
    for (SourceRecord r : records) {
      if (!sighted) {
        sighted = true;
        firstSightingNanos = now;
      }
      Seen before = seen.get(r.workerId());
      boolean changed =
          before == null
              || (r.reportsProgress()
                  ? r.progress() != before.progress()
                  : r.updatedAtMillis() != before.heartbeat());
      seen.put(
          r.workerId(),
          new Seen(
              PartyRecords.label(r),
              r.progress(),
              r.updatedAtMillis(),
              r.phase(),
              changed ? now : before.changedNanos()));
    }
  }

  /**
   * Fails when a party of {@code parties} stalled; with no parties named, every party seen so far
   * counts.
   *
   * @throws StalledPartyException naming the party, how long it has been silent, and its last phase
   */
  public void check(Collection<String> parties) {
    long now = ticker.nanoTime();
    for (String party : parties.isEmpty() ? List.copyOf(seen.keySet()) : parties) {
      Seen s = seen.get(party);
      if (s == null) {
        long since = Math.max(createdNanos, firstSightingNanos);
        if (sighted && now - since > stallLimit.toNanos()) {
          throw new StalledPartyException(
              "party '"
                  + party
                  + "' never heartbeated within the stall limit of "
                  + seconds(stallLimit.toNanos())
                  + " (its peers did)"
                  + storeFailure(),
              party,
              "");
        }
        continue;
      }
      long silent = now - s.changedNanos();
      if (silent > stallLimit.toNanos()) {
        throw new StalledPartyException(
            s.label()
                + " made no progress for "
                + seconds(silent)
                + " (stall limit "
                + seconds(stallLimit.toNanos())
                + "; stopped, killed or wedged), last seen "
                + (s.phase().isEmpty() ? "without a phase" : "'" + s.phase() + "'")
                + storeFailure(),
            party,
            s.phase());
      }
    }
  }

  /**
   * "label: phase" of each party of {@code parties} (every party seen when empty), for progress
   * lines.
   */
  public List<String> describe(Collection<String> parties) {
    List<String> out = new ArrayList<>();
    for (String party : parties.isEmpty() ? seen.keySet().stream().sorted().toList() : parties) {
      Seen s = seen.get(party);
      out.add(s == null ? "party '" + party + "': not seen yet" : s.label() + ": " + s.phase());
    }
    return out;
  }

  private String storeFailure() {
    return lastSampleFailure == null
        ? ""
        : " (its heartbeat records could not be read: " + lastSampleFailure.getMessage() + ")";
  }

  private static String seconds(long nanos) {
    return String.format(java.util.Locale.ROOT, "%.1f s", nanos / 1e9);
  }
}
