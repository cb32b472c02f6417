package dev.mx.cli.bench;

import dev.mx.api.metadata.PublishedTensor;
import dev.mx.api.metadata.Reclaim;
import dev.mx.api.metadata.ShardTable;
import dev.mx.api.metadata.VersionSlot;
import dev.mx.api.metadata.WeightVersion;
import dev.mx.api.metadata.WeightVersionState;
import dev.mx.api.metadata.WeightVersionStore;
import dev.mx.metadata.ShardTableCodec;
import dev.mx.metadata.redis.RedisMetadataStore;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.IntStream;

/**
 * The version control plane of one {@link ScaleScenario} against a real Redis: every trainer rank
 * and every inference rank is a thread speaking the real {@link WeightVersionStore} protocol of
 * {@code redis:} stores, over a pool of real {@link RedisMetadataStore} connections. Per step, in
 * order: {@code publish} (each trainer rank encodes its shard table and lands its slot; the last
 * turns the version READY), {@code discover} (each receiver finds the newest readable version),
 * {@code lease}, {@code fetch} (each receiver reads every slot, checks each table's SHA-256 and
 * decodes it), {@code release} (each receiver drops its lease) and {@code reclaim} (each trainer
 * rank releases the version and takes its slot back).
 */
final class ScaleControlPlane implements AutoCloseable {
  static final List<String> PHASES =
      List.of("publish", "discover", "lease", "fetch", "release", "reclaim");

  /** Connections shared by the simulated participants (one process would hold one each). */
  static final int CONNECTIONS = 16;

  private static final Duration LEASE_TTL = Duration.ofMinutes(5);

  /** One phase over every step measured: per-participant latencies, wall times, Redis cost. */
  static final class PhaseStats {
    final String name;
    final int participants;
    private final List<Long> latencies = new ArrayList<>();
    private final List<Long> walls = new ArrayList<>();
    private RedisCounters.Delta cost = new RedisCounters.Delta(0, 0);
    private int steps;

    PhaseStats(String name, int participants) {
      this.name = name;
      this.participants = participants;
    }

    void add(long[] latencyNanos, long wallNanos, RedisCounters.Delta delta) {
      Arrays.stream(latencyNanos).forEach(latencies::add);
      walls.add(wallNanos);
      cost = cost.plus(delta);
      steps++;
    }

    double p50Ms() {
      return percentile(latencies, 0.50) / 1e6;
    }

    double p99Ms() {
      return percentile(latencies, 0.99) / 1e6;
    }

    /** The median over steps of the phase's wall time: first participant start to last done. */
    double wallMs() {
      return percentile(walls, 0.50) / 1e6;
    }

    double commandsPerParticipant() {
      return (double) cost.calls() / steps / participants;
    }

    double bytesPerParticipant() {
      return (double) cost.bytes() / steps / participants;
    }
  }

  /** Every phase, and the step's wall time (publish start to the last slot reclaimed). */
  record Result(ScaleScenario scenario, Map<String, PhaseStats> phases, double stepWallMs) {}

  private final List<RedisMetadataStore> stores = new ArrayList<>();
  private final RedisCounters counters;
  private final ShardTableCodec codec = ShardTableCodec.standard();
  private final ExecutorService participants = Executors.newVirtualThreadPerTaskExecutor();
  private boolean closed;

  ScaleControlPlane(String redisUri) {
    RedisCounters c = new RedisCounters(redisUri);
    try {
      for (int i = 0; i < CONNECTIONS; i++) {
        stores.add(new RedisMetadataStore(redisUri, Duration.ofMinutes(30)));
      }
    } catch (RuntimeException e) {
      c.close();
      stores.forEach(RedisMetadataStore::close);
      throw e;
    }
    this.counters = c;
  }

  private WeightVersionStore store(int participant) {
    return stores.get(participant % stores.size()).versions();
  }

  /**
   * Runs one warm-up step and {@code steps} measured ones.
   *
   * @param tables each trainer rank's published tensors
   * @param lastTables filled with the encoded tables of the last step, by rank
   */
  Result run(
      ScaleScenario s,
      List<List<PublishedTensor>> tables,
      int steps,
      List<byte[]> lastTables,
      PrintStream progress)
      throws Exception {
    int trainers = s.trainerRanks();
    int receivers = s.inferenceRanks();
    Map<String, PhaseStats> phases = new LinkedHashMap<>();
    for (String p : PHASES) {
      boolean trainerPhase = p.equals("publish") || p.equals("reclaim");
      phases.put(p, new PhaseStats(p, trainerPhase ? trainers : receivers));
    }
    String model = s.storeModel();
    List<String> slots = IntStream.range(0, trainers).mapToObj(Integer::toString).toList();
    List<Long> stepWalls = new ArrayList<>();
    byte[][] encoded = new byte[trainers][];
    for (int step = 0; step <= steps; step++) {
      long stepNo = step;
      String id = "step-" + step;
      boolean measured = step > 0;
      long t0 = System.nanoTime();
      phase(
          phases.get("publish"),
          measured,
          r -> {
            byte[] table = codec.encode(s.table(r, tables.get(r), stepNo));
            encoded[r] = table;
            WeightVersionStore v = store(r);
            v.createVersion(model, id, stepNo, slots);
            v.publishSlot(model, VersionSlot.of(id, Integer.toString(r), "trainer-" + r, table));
          });
      WeightVersion ready = store(0).version(model, id).orElseThrow();
      if (ready.state() != WeightVersionState.READY) {
        throw new IllegalStateException(
            "version '" + id + "' of " + model + " is " + ready.state() + " after every slot");
      }
      phase(
          phases.get("discover"),
          measured,
          r -> {
            WeightVersion v = store(r).latestReadable(model).orElseThrow();
            if (!v.id().equals(id)) {
              throw new IllegalStateException(
                  "receiver " + r + " found version '" + v.id() + "', expected '" + id + "'");
            }
          });
      phase(
          phases.get("lease"),
          measured,
          r -> store(r).acquireLease(model, id, "inference-" + r, LEASE_TTL));
      phase(
          phases.get("fetch"),
          measured,
          r -> {
            List<VersionSlot> got = store(r).slots(model, id);
            if (got.size() != trainers) {
              throw new IllegalStateException(
                  "receiver " + r + " read " + got.size() + " slots of '" + id + "', expected "
                      + trainers);
            }
            for (VersionSlot slot : got) {
              ShardTable t = codec.decode(slot.verified(model).table());
              if (t.publisherStep() == null || t.publisherStep() != stepNo) {
                throw new IllegalStateException(
                    "slot " + slot.slot() + " carries step " + t.publisherStep() + ", not " + stepNo);
              }
            }
          });
      phase(
          phases.get("release"),
          measured,
          r -> {
            if (!store(r).dropLease(model, id, "inference-" + r)) {
              throw new IllegalStateException("receiver " + r + " held no lease on '" + id + "'");
            }
          });
      phase(
          phases.get("reclaim"),
          measured,
          r -> {
            WeightVersionStore v = store(r);
            v.release(model, id);
            Reclaim granted = v.reclaim(model, id, Integer.toString(r), "trainer-" + r);
            if (!granted.granted()) {
              throw new IllegalStateException(
                  "trainer rank " + r + " could not reclaim its slot of '" + id + "': " + granted);
            }
          });
      if (measured) {
        stepWalls.add(System.nanoTime() - t0);
      }
      progress.printf(
          Locale.ROOT,
          "scale: %s step %d%s: %.0f ms%n",
          s.label(),
          step,
          measured ? "" : " (warm-up)",
          (System.nanoTime() - t0) / 1e6);
    }
    lastTables.clear();
    lastTables.addAll(Arrays.asList(encoded));
    return new Result(s, phases, percentile(stepWalls, 0.5) / 1e6);
  }

  /** What one participant does in a phase. */
  @FunctionalInterface
  private interface Work {
    void run(int participant) throws Exception;
  }

  /** Runs {@code work} for every participant at once and records the phase when measured. */
  private void phase(PhaseStats stats, boolean measured, Work work) throws Exception {
    RedisCounters.Snapshot before = counters.snapshot();
    long t0 = System.nanoTime();
    List<Future<Long>> running = new ArrayList<>();
    for (int i = 0; i < stats.participants; i++) {
      int participant = i;
      running.add(
          participants.submit(
              () -> {
                long start = System.nanoTime();
                work.run(participant);
                return System.nanoTime() - start;
              }));
    }
    long[] latencies = new long[running.size()];
    for (int i = 0; i < latencies.length; i++) {
      latencies[i] = running.get(i).get();
    }
    long wall = System.nanoTime() - t0;
    RedisCounters.Snapshot after = counters.snapshot();
    if (measured) {
      stats.add(latencies, wall, RedisCounters.between(before, after));
    }
  }

  /** The {@code q}-quantile (nearest rank) of {@code values}; 0 when empty. */
  static double percentile(List<Long> values, double q) {
    if (values.isEmpty()) {
      return 0;
    }
    long[] v = values.stream().mapToLong(Long::longValue).sorted().toArray();
    int idx = (int) Math.ceil(q * v.length) - 1;
    return v[Math.max(0, Math.min(v.length - 1, idx))];
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    participants.shutdownNow();
    stores.forEach(RedisMetadataStore::close);
    counters.close();
  }
}
