package dev.mx.refit.stage;

import dev.mx.api.refit.WirePolicy;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.api.transport.Transport;
import dev.mx.refit.jfr.PeerReadEvent;
import dev.mx.refit.reslice.Reslicer;
import dev.mx.refit.wire.FusedWire;
import dev.mx.refit.wire.WireStages;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;

/**
 * The wire stage with the per-peer work overlapped on it: each staged shard's verification and
 * copies, and the digest of each shard verified where it landed, depend only on the reads of the
 * peer that serves it. With the built-in fused policy and worker threads, the reads go out one peer
 * at a time (peers with the most work first) and each peer's work starts on a worker as soon as
 * that peer's reads have landed, while the next peer's reads are on the wire. Otherwise the policy
 * runs as configured and the work follows it.
 *
 * <p>Safe because no later stage writes what this work reads: staging buffers are written only by
 * the wire, and the coverage gate guarantees no receive-buffer element is written twice. Nothing
 * submitted outlives a call: on any failure the work already started is awaited before the failure
 * is rethrown.
 */
public final class PipelinedWire {
  private PipelinedWire() {}

  /**
   * Runs the wire and the per-peer work; returns stage times: the policy's wire keys, plus {@code
   * verify_s} (the work, run after the wire) or {@code pipeline_drain_s} (waiting for overlapped
   * work after the last peer landed).
   */
  public static Map<String, Double> run(
      WirePolicy policy,
      Transport transport,
      Descriptors d,
      Map<String, List<Runnable>> workBySession,
      ExecutorService workers,
      Duration timeout,
      boolean pipeline) {
    Map<String, Double> stages = new LinkedHashMap<>();
    int tasks = 0;
    for (List<Runnable> l : workBySession.values()) {
      tasks += l.size();
    }
    // Only the built-in fused policy is split per peer; a custom policy always issues its own
    // reads.
    if (!pipeline || !(policy instanceof FusedWire) || tasks == 0 || workers == null) {
      stages.putAll(policy.transfer(transport, d.groups(), timeout));
      if (tasks > 0) {
        long t = System.nanoTime();
        List<Runnable> all = new ArrayList<>(tasks);
        workBySession.values().forEach(all::addAll);
        if (workers == null || all.size() == 1) {
          all.forEach(Runnable::run);
        } else {
          Reslicer.runAll(all, workers);
        }
        stages.put("verify_s", seconds(t));
      }
      return stages;
    }
    Map<String, List<ReadDescriptor>> reads = d.bySession();
    List<String> order = new ArrayList<>(reads.keySet());
    // Peers with the most work first, so the work overlaps as much of the remaining wire as
    // possible.
    order.sort(
        (a, b) ->
            Integer.compare(
                workBySession.getOrDefault(b, List.of()).size(),
                workBySession.getOrDefault(a, List.of()).size()));
    List<Future<?>> started = new ArrayList<>(tasks);
    RuntimeException failure = null;
    long wire = 0;
    try {
      for (String session : order) {
        long t = System.nanoTime();
        PeerReadEvent event = PeerReadEvent.start(session, reads.get(session));
        transport.read(reads.get(session), timeout);
        PeerReadEvent.finish(event);
        wire += System.nanoTime() - t;
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
    } catch (RuntimeException e) {
      failure = e;
    }
    stages.put(WireStages.FUSED, wire / 1e9);
    long t = System.nanoTime();
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
    stages.put("pipeline_drain_s", seconds(t));
    return stages;
  }

  private static RuntimeException add(RuntimeException first, RuntimeException next) {
    if (first == null) {
      return next;
    }
    first.addSuppressed(next);
    return first;
  }

  private static double seconds(long start) {
    return (System.nanoTime() - start) / 1e9;
  }
}
