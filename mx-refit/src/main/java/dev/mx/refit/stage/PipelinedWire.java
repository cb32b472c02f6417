package dev.mx.refit.stage;

import dev.mx.api.annotation.Internal;
import dev.mx.api.refit.WireGroups;
import dev.mx.api.refit.WirePolicy;
import dev.mx.api.transport.LandingFold;
import dev.mx.api.transport.LandingFolds;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.api.transport.Transport;
import dev.mx.refit.jfr.PeerReadEvent;
import dev.mx.refit.jfr.StageClock;
import dev.mx.refit.reslice.Reslicer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;

/**
 * The wire stage with the per-peer work overlapped on it: each staged shard's verification and
 * copies, and the digest of each shard verified where it landed, depend only on the reads of the
 * peer that serves it. With worker threads, the reads go out one peer at a time (peers with the
 * most work first), each peer's reads in landing batches of about {@link #LANDING_PROPERTY} bytes,
 * and the wire policy issues every batch (its groups cut to the batch): this stage decides what is
 * read when, the policy how it goes to the transport, so a custom or decorated policy keeps the
 * pipelining. Work keyed by a read ({@code onLanded}: the digest of the bytes it brought) rides on
 * the copy where the transport moves the bytes with the CPU ({@link LandedWork} is the read's
 * {@link LandingFold}, bound around every transfer): the wire thread digests each vector it copies,
 * so a verified byte is read from memory once. Where the transport does not fold (DMA, the kernel's
 * copies), that work starts on a worker as soon as the read's batch has landed, while the next
 * batch is on the wire and the bytes just read are still in cache. Work keyed by a peer starts once
 * all of that peer's reads have landed. Without workers, work or pipelining, the policy issues
 * every read at once and the work follows.
 *
 * <p>Safe because no later stage writes what this work reads: staging buffers are written only by
 * the wire, and the coverage gate guarantees no receive-buffer element is written twice. Nothing
 * submitted outlives a call: on any failure the work already started is awaited before the failure
 * is rethrown.
 */
@Internal
public final class PipelinedWire {
  private PipelinedWire() {}

  /** Bytes per landing batch; {@code 0} reads each peer in one batch. */
  public static final String LANDING_PROPERTY = "mx.receiver.landing-bytes";

  public static final String LANDING_ENV = "MX_RECEIVER_LANDING_BYTES";

  /**
   * Default landing batch: small enough that a batch is still in the last-level cache when a worker
   * digests it, large enough that a batch's fixed cost (one transport call) does not show.
   */
  public static final long DEFAULT_LANDING_BYTES = 8L << 20;

  /**
   * Runs the wire and the per-peer work; returns stage times: the policy's wire keys, plus {@code
   * verify_s} (the work, run after the wire) or {@code pipeline_drain_s} (waiting for overlapped
   * work after the last peer landed).
   *
   * @param onLanded work that needs only the bytes of one read (compared by value); work keyed by a
   *     read that this call does not issue runs after the wire
   * @param landingBytes bytes per landing batch ({@code 0}: one batch per peer)
   * @param digestOnWire run the work of a batch's reads on this thread as soon as the batch landed
   *     (its bytes still in cache, no second thread competing with the wire) instead of on a worker
   */
  public static Map<String, Double> run(
      WirePolicy policy,
      Transport transport,
      Descriptors d,
      Map<String, List<Runnable>> workBySession,
      Map<ReadDescriptor, ? extends LandedWork> onLanded,
      ExecutorService workers,
      Duration timeout,
      boolean pipeline,
      long landingBytes,
      boolean digestOnWire) {
    Map<String, Double> stages = new LinkedHashMap<>();
    int tasks = 0;
    for (List<Runnable> l : workBySession.values()) {
      tasks += l.size();
    }
    tasks += onLanded.size();
    LandingFolds folds = LandingFolds.of(onLanded);
    if (!pipeline || tasks == 0 || workers == null) {
      stages.putAll(folds.during(() -> policy.transfer(transport, d.groups(), timeout)));
      if (tasks > 0) {
        StageClock verifyClock = StageClock.start("verify_s");
        List<Runnable> all = new ArrayList<>(tasks);
        for (LandedWork w : onLanded.values()) {
          LandedWork.Left left = w.afterLanding();
          left.inline().forEach(Runnable::run);
          all.addAll(left.offloaded());
        }
        workBySession.values().forEach(all::addAll);
        if (workers == null || all.size() == 1) {
          all.forEach(Runnable::run);
        } else {
          Reslicer.runAll(all, workers);
        }
        verifyClock.stopInto(stages);
      }
      return stages;
    }
    Map<String, PeerReads> reads = PeerReads.of(d.groups());
    List<String> order = new ArrayList<>(reads.keySet());
    // Peers with the most work first, so the work overlaps as much of the remaining wire as
    // possible.
    order.sort(
        (a, b) ->
            Integer.compare(
                workBySession.getOrDefault(b, List.of()).size(),
                workBySession.getOrDefault(a, List.of()).size()));
    // A read issued twice (same bytes to the same place) releases its work at its last landing.
    Map<ReadDescriptor, LandedWork> pending = new HashMap<>(onLanded);
    List<Future<?>> started = new ArrayList<>(tasks);
    RuntimeException failure = null;
    Map<String, Double> wire = new LinkedHashMap<>();
    int batches = 0;
    try {
      for (String session : order) {
        PeerReads peer = reads.get(session);
        List<List<ReadDescriptor>> peerBatches = batches(peer.all(), landingBytes);
        // A read is one peer's, so its last landing is among this peer's batches.
        Map<ReadDescriptor, Integer> lastBatch = new HashMap<>();
        for (int k = 0; k < peerBatches.size(); k++) {
          for (ReadDescriptor r : peerBatches.get(k)) {
            lastBatch.put(r, k);
          }
        }
        long deadline = System.nanoTime() + timeout.toNanos();
        PeerReadEvent event = PeerReadEvent.start(session, peer.all());
        int from = 0;
        for (int k = 0; k < peerBatches.size(); k++) {
          List<ReadDescriptor> batch = peerBatches.get(k);
          // The policy issues every batch: a custom or decorated policy keeps the pipelining.
          WireGroups groups = peer.groups(from, from + batch.size());
          Duration remaining = Duration.ofNanos(Math.max(1_000_000, deadline - System.nanoTime()));
          folds
              .during(() -> policy.transfer(transport, groups, remaining))
              .forEach((key, seconds) -> wire.merge(key, seconds, Double::sum));
          from += batch.size();
          for (ReadDescriptor r : batch) {
            LandedWork landed = lastBatch.get(r) == k ? pending.remove(r) : null;
            if (landed != null) {
              release(landed, digestOnWire ? null : workers, started);
            }
          }
        }
        batches += peerBatches.size();
        PeerReadEvent.finish(event);
        for (Runnable r : workBySession.getOrDefault(session, List.of())) {
          started.add(workers.submit(r));
        }
      }
      for (Map.Entry<String, List<Runnable>> e : workBySession.entrySet()) {
        if (!reads.containsKey(e.getKey())) {
          e.getValue()
              .forEach(r -> started.add(workers.submit(r))); // nothing to wait for on the wire
        }
      }
      // Keyed by a read this call did not issue: nothing more will land for it.
      for (LandedWork w : pending.values()) {
        release(w, workers, started);
      }
    } catch (RuntimeException e) {
      failure = e;
    }
    stages.putAll(wire);
    StageClock pipelineDrainClock = StageClock.start("pipeline_drain_s");
    for (Future<?> f : started) {
      try {
        f.get();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        failure =
            add(
                failure,
                new IllegalStateException("interrupted while waiting for per-peer work", e));
      } catch (ExecutionException e) {
        Throwable c = e.getCause();
        failure =
            add(
                failure,
                c instanceof RuntimeException re ? re : new IllegalStateException(c.toString(), c));
      }
    }
    if (failure != null) {
      throw failure;
    }
    pipelineDrainClock.stopInto(stages);
    if (batches > reads.size()) {
      stages.put("landing_batches", (double) batches);
    }
    return stages;
  }

  /**
   * Runs what is left of a landed read's work: comparing digests its copy finished, on this thread;
   * then, on {@code workers} (on this thread when null), what needs verified bytes, or the digest
   * of bytes that landed unfolded.
   */
  private static void release(LandedWork landed, ExecutorService workers, List<Future<?>> started) {
    LandedWork.Left left = landed.afterLanding();
    left.inline().forEach(Runnable::run);
    if (workers == null) {
      left.offloaded().forEach(Runnable::run);
    } else {
      left.offloaded().forEach(w -> started.add(workers.submit(w)));
    }
  }

  /**
   * One peer's reads in wire order (exact, then full and staged, then convert), split back into the
   * policy's groups for any consecutive run of them.
   */
  private record PeerReads(
      List<ReadDescriptor> exact, List<ReadDescriptor> full, List<ReadDescriptor> convert) {

    static Map<String, PeerReads> of(WireGroups groups) {
      Map<String, PeerReads> m = new LinkedHashMap<>();
      java.util.function.Function<String, PeerReads> empty =
          k -> new PeerReads(new ArrayList<>(), new ArrayList<>(), new ArrayList<>());
      groups.exact().forEach(r -> m.computeIfAbsent(r.session(), empty).exact.add(r));
      groups.full().forEach(r -> m.computeIfAbsent(r.session(), empty).full.add(r));
      groups.convert().forEach(r -> m.computeIfAbsent(r.session(), empty).convert.add(r));
      return m;
    }

    List<ReadDescriptor> all() {
      List<ReadDescriptor> out = new ArrayList<>(exact.size() + full.size() + convert.size());
      out.addAll(exact);
      out.addAll(full);
      out.addAll(convert);
      return out;
    }

    /** Reads {@code [from, to)} of {@link #all()} as the groups they came from. */
    WireGroups groups(int from, int to) {
      int e = exact.size();
      int f = e + full.size();
      return new WireGroups(
          slice(exact, from, to, 0), slice(full, from, to, e), slice(convert, from, to, f));
    }

    private static List<ReadDescriptor> slice(
        List<ReadDescriptor> group, int from, int to, int offset) {
      int a = Math.clamp(from - offset, 0, group.size());
      int b = Math.clamp(to - offset, 0, group.size());
      return group.subList(a, b);
    }
  }

  /** Consecutive runs of {@code reads} of at least {@code bytes} each (one run when 0). */
  static List<List<ReadDescriptor>> batches(List<ReadDescriptor> reads, long bytes) {
    if (bytes <= 0) {
      return List.of(reads);
    }
    List<List<ReadDescriptor>> out = new ArrayList<>();
    int from = 0;
    long held = 0;
    for (int i = 0; i < reads.size(); i++) {
      held += reads.get(i).nbytes();
      if (held >= bytes) {
        out.add(reads.subList(from, i + 1));
        from = i + 1;
        held = 0;
      }
    }
    if (from < reads.size()) {
      out.add(reads.subList(from, reads.size()));
    }
    return out;
  }

  private static RuntimeException add(RuntimeException first, RuntimeException next) {
    if (first == null) {
      return next;
    }
    first.addSuppressed(next);
    return first;
  }
}
