package dev.mx.bench.suite;

import dev.mx.api.metadata.Reclaim;
import dev.mx.api.metadata.ShardTable;
import dev.mx.api.metadata.VersionSlot;
import dev.mx.api.metadata.WeightVersion;
import dev.mx.api.metadata.WeightVersionState;
import dev.mx.api.metadata.WeightVersionStore;
import dev.mx.metadata.ParallelMap;
import dev.mx.metadata.ShardTableCodec;
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
import java.util.concurrent.Semaphore;
import java.util.stream.IntStream;

/**
 * The version control plane of one {@link ScaleScenario} against a real server ({@link
 * ControlPlaneBackend}: one Redis holding every table, or RefitService with tables served by the
 * trainers): every trainer rank and every inference rank is a thread speaking the real {@link
 * WeightVersionStore} protocol through the backend's real stores. Per step, in order: {@code
 * publish} (each trainer rank encodes its shard table and lands its slot; the last turns the
 * version READY), {@code discover} (each receiver finds the newest readable version), {@code
 * lease}, {@code fetch} (each receiver reads every slot, checks each table's SHA-256 and decodes
 * it), {@code release} (each receiver drops its lease) and {@code reclaim} (each trainer rank
 * releases the version and takes its slot back).
 */
final class ScaleControlPlane implements AutoCloseable {
  static final List<String> PHASES =
      List.of("publish", "discover", "lease", "fetch", "release", "reclaim");

  private static final Duration LEASE_TTL = Duration.ofMinutes(5);

  /** One phase over every step measured: per-participant latencies, wall times, Redis cost. */
  static final class PhaseStats {
    final String name;
    final int participants;
    private final List<Long> latencies = new ArrayList<>();
    private final List<Long> walls = new ArrayList<>();
    private ServiceCost cost = ServiceCost.NONE;
    private int steps;

    PhaseStats(String name, int participants) {
      this.name = name;
      this.participants = participants;
    }

    void add(long[] latencyNanos, long wallNanos, ServiceCost delta) {
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

    /** The central server's time in this phase's calls (Redis: its commands), per step. */
    double serverMs() {
      return cost.usec() / 1e3 / steps;
    }
  }

  /** Every phase, and the step's wall time (publish start to the last slot reclaimed). */
  record Result(ScaleScenario scenario, Map<String, PhaseStats> phases, double stepWallMs) {}

  private final ControlPlaneBackend backend;
  private final ShardTableCodec codec = ShardTableCodec.standard();
  private final ExecutorService participants = Executors.newVirtualThreadPerTaskExecutor();

  /**
   * Receivers fetching tables at once: one per connection. Each holds every table of the model in
   * memory while it checks them, and 128 at once would not fit one JVM; a participant's latency is
   * counted from the phase's start, so the waiting counts.
   */
  private final Semaphore fetching = new Semaphore(RedisControlPlane.CONNECTIONS);

  private boolean closed;

  /** The control plane of {@code backend}, which the caller closes. */
  ScaleControlPlane(ControlPlaneBackend backend) {
    this.backend = backend;
  }

  /**
   * Runs {@code steps} measured steps, after an unmeasured one when {@code warmUp}.
   *
   * @param tables each trainer rank's published tensors
   * @param lastTables filled with the encoded tables of the last step, by rank
   */
  Result run(
      ScaleScenario s,
      List<ScaleScenario.RankTensors> tables,
      int steps,
      boolean warmUp,
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
    List<String> slots = IntStream.range(0, trainers).mapToObj(Integer::toString).toList();
    List<Long> stepWalls = new ArrayList<>();
    byte[][] encoded = new byte[trainers][];
    try (ControlPlaneBackend.Participants p = backend.participants(trainers)) {
      steps(s, tables, steps, warmUp, p, phases, slots, stepWalls, encoded, progress);
    }
    lastTables.clear();
    lastTables.addAll(Arrays.asList(encoded));
    return new Result(s, phases, percentile(stepWalls, 0.5) / 1e6);
  }

  private void steps(
      ScaleScenario s,
      List<ScaleScenario.RankTensors> tables,
      int steps,
      boolean warmUp,
      ControlPlaneBackend.Participants p,
      Map<String, PhaseStats> phases,
      List<String> slots,
      List<Long> stepWalls,
      byte[][] encoded,
      PrintStream progress)
      throws Exception {
    String model = s.storeModel();
    for (int step = warmUp ? 0 : 1; step <= steps; step++) {
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
            WeightVersionStore v = p.trainer(r);
            v.createVersion(model, id, stepNo, slots);
            v.publishSlot(model, VersionSlot.of(id, Integer.toString(r), "trainer-" + r, table));
          });
      WeightVersion ready = p.trainer(0).version(model, id).orElseThrow();
      if (ready.state() != WeightVersionState.READY) {
        throw new IllegalStateException(
            "version '" + id + "' of " + model + " is " + ready.state() + " after every slot");
      }
      phase(
          phases.get("discover"),
          measured,
          r -> {
            WeightVersion v = p.receiver(r).latestReadable(model).orElseThrow();
            if (!v.id().equals(id)) {
              throw new IllegalStateException(
                  "receiver " + r + " found version '" + v.id() + "', expected '" + id + "'");
            }
          });
      phase(
          phases.get("lease"),
          measured,
          r -> p.receiver(r).acquireLease(model, id, holder(model, r), LEASE_TTL));
      phase(
          phases.get("fetch"),
          measured,
          r -> {
            fetching.acquire();
            try {
              fetchAll(p.receiver(r), model, id, r, slots.size(), stepNo, false);
            } finally {
              fetching.release();
            }
          });
      phase(
          phases.get("release"),
          measured,
          r -> {
            if (!p.receiver(r).dropLease(model, id, holder(model, r))) {
              throw new IllegalStateException("receiver " + r + " held no lease on '" + id + "'");
            }
          });
      phase(
          phases.get("reclaim"),
          measured,
          r -> {
            WeightVersionStore v = p.trainer(r);
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
  }

  /**
   * Receiver {@code r} reads every slot of the version and checks each table's SHA-256; with {@code
   * decode} it also decodes every table, as a real receiver does on its own CPU.
   *
   * @return the tables' entries when decoded, else 0
   */
  private long fetchAll(
      WeightVersionStore store,
      String model,
      String id,
      int r,
      int trainers,
      long step,
      boolean decode) {
    List<VersionSlot> got = store.slots(model, id);
    if (got.size() != trainers) {
      throw new IllegalStateException(
          "receiver " + r + " read " + got.size() + " slots of '" + id + "', expected " + trainers);
    }
    // As VersionFollower does: each table checked (and decoded) on its own thread, every core.
    List<ShardTable> tables =
        ParallelMap.inOrder(
            got,
            slot -> {
              byte[] table = slot.verified(model).table();
              return decode ? codec.decode(table) : null;
            });
    long entries = 0;
    for (int i = 0; decode && i < got.size(); i++) {
      ShardTable t = tables.get(i);
      if (t.publisherStep() == null || t.publisherStep() != step) {
        throw new IllegalStateException(
            "slot " + got.get(i).slot() + " carries step " + t.publisherStep() + ", not " + step);
      }
      entries += t.entryCount();
    }
    return entries;
  }

  /**
   * Each phase for one participant with the control plane to itself (medians): a trainer creating
   * and publishing its slot, a receiver finding the version, leasing and dropping it, and reading,
   * checking and decoding every table. At scale every participant has its own host, so a phase
   * takes this long where the central service is not what bounds it.
   */
  record Alone(
      double publishMs,
      double discoverMs,
      double leaseMs,
      double fetchMs,
      ServiceCost publishCost,
      ServiceCost discoverCost,
      ServiceCost leaseCost,
      ServiceCost fetchCost) {

    /**
     * The central service's time per call when nothing contends with it (the server's own cost per
     * call, as Redis's per-command time is), in milliseconds.
     */
    static double perCallMs(ServiceCost c) {
      return c.calls() == 0 ? 0 : c.usec() / 1e3 / c.calls();
    }
  }

  /** {@link Alone}: trainers publish one after another, then receiver 0 runs {@code reps} times. */
  Alone alone(ScaleScenario s, List<ScaleScenario.RankTensors> tables, int reps) throws Exception {
    String model = s.storeModel() + "-alone";
    String id = "alone";
    int trainers = s.trainerRanks();
    List<String> slots = IntStream.range(0, trainers).mapToObj(Integer::toString).toList();
    try (ControlPlaneBackend.Participants p = backend.participants(trainers)) {
      List<Long> publish = new ArrayList<>();
      ServiceCost publishCost = ServiceCost.NONE;
      ServiceCost discoverCost = ServiceCost.NONE;
      ServiceCost leaseCost = ServiceCost.NONE;
      ServiceCost fetchCost = ServiceCost.NONE;
      for (int r = 0; r < trainers; r++) {
        byte[] table = codec.encode(s.table(r, tables.get(r), 1));
        WeightVersionStore v = p.trainer(r);
        ControlPlaneBackend.Meter m = backend.meter();
        long t0 = System.nanoTime();
        v.createVersion(model, id, 1, slots);
        v.publishSlot(model, VersionSlot.of(id, Integer.toString(r), "trainer-" + r, table));
        publish.add(System.nanoTime() - t0);
        publishCost = publishCost.plus(m.stop());
      }
      WeightVersionStore receiver = p.receiver(0);
      List<Long> discover = new ArrayList<>();
      List<Long> lease = new ArrayList<>();
      List<Long> fetch = new ArrayList<>();
      long expected = tables.stream().mapToLong(ScaleScenario.RankTensors::entries).sum();
      for (int i = 0; i < reps; i++) {
        ControlPlaneBackend.Meter m = backend.meter();
        long t0 = System.nanoTime();
        WeightVersion found = receiver.latestReadable(model).orElseThrow();
        discover.add(System.nanoTime() - t0);
        discoverCost = discoverCost.plus(m.stop());
        if (!found.id().equals(id)) {
          throw new IllegalStateException("a lone receiver found '" + found.id() + "'");
        }
        m = backend.meter();
        t0 = System.nanoTime();
        receiver.acquireLease(model, id, holder(model, 0), LEASE_TTL);
        receiver.dropLease(model, id, holder(model, 0));
        lease.add(System.nanoTime() - t0);
        leaseCost = leaseCost.plus(m.stop());
        m = backend.meter();
        t0 = System.nanoTime();
        long entries = fetchAll(receiver, model, id, 0, trainers, 1, true);
        fetch.add(System.nanoTime() - t0);
        fetchCost = fetchCost.plus(m.stop());
        if (entries != expected) {
          throw new IllegalStateException(
              "a lone receiver decoded " + entries + " table entries, expected " + expected);
        }
      }
      for (int r = 0; r < trainers; r++) {
        WeightVersionStore v = p.trainer(r);
        v.release(model, id);
        v.reclaim(model, id, Integer.toString(r), "trainer-" + r);
      }
      return new Alone(
          percentile(publish, 0.5) / 1e6,
          percentile(discover, 0.5) / 1e6,
          percentile(lease, 0.5) / 1e6,
          percentile(fetch, 0.5) / 1e6,
          publishCost,
          discoverCost,
          leaseCost,
          fetchCost);
    }
  }

  /**
   * Receiver {@code r}'s lease holder name. Per model: over {@code mx://} a holder is a registered
   * worker of one model, and the rank counts run one after another while registrations live on.
   */
  private static String holder(String model, int r) {
    return model + "-inference-" + r;
  }

  /** What one participant does in a phase. */
  @FunctionalInterface
  private interface Work {
    void run(int participant) throws Exception;
  }

  /** Runs {@code work} for every participant at once and records the phase when measured. */
  private void phase(PhaseStats stats, boolean measured, Work work) throws Exception {
    ControlPlaneBackend.Meter meter = backend.meter();
    long t0 = System.nanoTime();
    List<Future<Long>> running = new ArrayList<>();
    for (int i = 0; i < stats.participants; i++) {
      int participant = i;
      running.add(
          participants.submit(
              () -> {
                work.run(participant);
                // From the phase's start: what a participant waits for counts, as in a real step.
                return System.nanoTime() - t0;
              }));
    }
    long[] latencies = new long[running.size()];
    for (int i = 0; i < latencies.length; i++) {
      latencies[i] = running.get(i).get();
    }
    long wall = System.nanoTime() - t0;
    ServiceCost cost = meter.stop();
    if (measured) {
      stats.add(latencies, wall, cost);
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
  }
}
