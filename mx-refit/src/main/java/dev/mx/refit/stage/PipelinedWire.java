package dev.mx.refit.stage;

import dev.mx.api.digest.DigestProvider;
import dev.mx.api.refit.WirePolicy;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.api.transport.Transport;
import dev.mx.refit.wire.WireStages;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.function.Supplier;

/**
 * The wire stage with the staged-shard stage overlapped on it. With the fused policy and worker threads, the
 * reads go out one peer at a time (peers that fill staged shards first) and each staged shard's
 * verification and copies start on a worker as soon as its peer's reads have landed, while the next peer's
 * reads are on the wire. Otherwise the policy runs as configured and the staged work follows it.
 *
 * <p>Nothing submitted outlives a call: on any failure, the work already started is awaited before the
 * failure is rethrown, so no worker writes a buffer after the refit returned.
 */
public final class PipelinedWire {
  private PipelinedWire() {}

  /**
   * Runs the wire and the staged work; returns stage times: the policy's wire keys, plus
   * {@code staged_s} (staged work after the wire) or {@code pipeline_drain_s} (waiting for overlapped work
   * after the last peer landed).
   */
  public static Map<String, Double> run(WirePolicy policy, Transport transport, Descriptors d, List<StagedWork> works,
      Supplier<DigestProvider> digests, ExecutorService workers, Duration timeout, boolean pipeline) {
    Map<String, Double> stages = new LinkedHashMap<>();
    // Only the built-in fused policy is split per peer; a custom policy always issues its own reads.
    if (!pipeline || !(policy instanceof dev.mx.refit.wire.FusedWire) || works.isEmpty() || workers == null) {
      stages.putAll(policy.transfer(transport, d.groups(), timeout));
      if (!works.isEmpty()) {
        long t = System.nanoTime();
        DigestProvider dp = anyVerifies(works) ? digests.get() : null;
        List<Runnable> tasks = new ArrayList<>();
        for (StagedWork w : works) {
          tasks.add(() -> w.run(dp));
        }
        if (workers == null || tasks.size() == 1) {
          tasks.forEach(Runnable::run);
        } else {
          dev.mx.refit.reslice.Reslicer.runAll(tasks, workers);
        }
        stages.put("staged_s", seconds(t));
      }
      return stages;
    }
    DigestProvider dp = anyVerifies(works) ? digests.get() : null;
    Map<String, List<StagedWork>> worksBySession = new LinkedHashMap<>();
    for (StagedWork w : works) {
      worksBySession.computeIfAbsent(w.session(), k -> new ArrayList<>()).add(w);
    }
    Map<String, List<ReadDescriptor>> reads = d.bySession();
    List<String> order = new ArrayList<>();
    for (String s : reads.keySet()) {
      if (worksBySession.containsKey(s)) {
        order.add(s);
      }
    }
    for (String s : reads.keySet()) {
      if (!worksBySession.containsKey(s)) {
        order.add(s);
      }
    }
    List<Future<?>> started = new ArrayList<>();
    RuntimeException failure = null;
    long wire = 0;
    try {
      for (String session : order) {
        long t = System.nanoTime();
        transport.read(reads.get(session), timeout);
        wire += System.nanoTime() - t;
        for (StagedWork w : worksBySession.getOrDefault(session, List.of())) {
          started.add(workers.submit(() -> w.run(dp)));
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
        failure = add(failure, new IllegalStateException("interrupted while waiting for staged shards", e));
      } catch (ExecutionException e) {
        Throwable c = e.getCause();
        failure = add(failure, c instanceof RuntimeException re ? re : new IllegalStateException(c.toString(), c));
      }
    }
    if (failure != null) {
      throw failure;
    }
    stages.put("pipeline_drain_s", seconds(t));
    return stages;
  }

  private static boolean anyVerifies(List<StagedWork> works) {
    for (StagedWork w : works) {
      if (w.verifies()) {
        return true;
      }
    }
    return false;
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
