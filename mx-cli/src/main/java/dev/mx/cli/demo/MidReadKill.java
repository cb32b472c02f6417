package dev.mx.cli.demo;

import dev.mx.api.refit.WireGroups;
import dev.mx.api.refit.WirePolicy;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.api.transport.Transport;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The demo's {@code kill-publisher-mid-read} fault on a receiver writing in place: a wire policy
 * around the configured one. Armed with the trainers' pids by session, its next call issues the
 * first half of its reads (so the live weights hold bytes of the new step), kills the trainer the
 * second half reads from and waits until it is gone, then issues the second half, which meets a
 * dead publisher. The step thus fails part-way whatever the landing batches are. Unarmed it only
 * forwards.
 */
final class MidReadKill implements WirePolicy {
  /** The fault kind the orchestrator sends, followed by {@code :SESSION=PID,...}. */
  static final String KIND = "kill-publisher-mid-read";

  private final WirePolicy delegate;
  private volatile Map<String, Long> pids = Map.of();

  MidReadKill(WirePolicy delegate) {
    this.delegate = delegate;
  }

  /**
   * The orchestrator's side: arms the fault in {@code receiver} with the session and pid of every
   * trainer (each in its own process), so it kills the one it reads from half-way.
   */
  static void armIn(WorkerHandle receiver, List<WorkerHandle> trainers, Duration timeout)
      throws Exception {
    List<String> pids = new ArrayList<>();
    for (int rank = 0; rank < trainers.size(); rank++) {
      pids.add(Workers.trainerSession(null, rank) + "=" + ((ChildWorker) trainers.get(rank)).pid());
    }
    receiver.call(Map.of("cmd", "fault", "kind", KIND + ":" + String.join(",", pids)), timeout);
  }

  /** Arms the fault from {@code SESSION=PID,...}: the trainers this receiver may read from. */
  void arm(String sessionsAndPids) {
    Map<String, Long> m = new HashMap<>();
    for (String pair : sessionsAndPids.split(",")) {
      int eq = pair.indexOf('=');
      if (eq <= 0) {
        throw new IllegalArgumentException(KIND + ": want SESSION=PID, got '" + pair + "'");
      }
      m.put(pair.substring(0, eq), Long.parseLong(pair.substring(eq + 1)));
    }
    pids = Map.copyOf(m);
  }

  @Override
  public String name() {
    return delegate.name();
  }

  @Override
  public Map<String, Double> transfer(Transport transport, WireGroups groups, Duration timeout) {
    List<ReadDescriptor> all = new ArrayList<>(groups.exact());
    all.addAll(groups.full());
    all.addAll(groups.convert());
    Map<String, Long> armed = pids;
    if (armed.isEmpty() || all.isEmpty()) {
      return delegate.transfer(transport, groups, timeout);
    }
    pids = Map.of();
    // Halves of the reads (a single read split by bytes), the first issued before the kill.
    List<ReadDescriptor> first = new ArrayList<>();
    List<ReadDescriptor> second = new ArrayList<>();
    if (all.size() == 1) {
      ReadDescriptor d = all.getFirst();
      long half = d.nbytes() / 2;
      first.add(new ReadDescriptor(d.session(), d.srcAddr(), d.dstAddr(), half));
      second.add(
          new ReadDescriptor(
              d.session(), d.srcAddr() + half, d.dstAddr() + half, d.nbytes() - half));
    } else {
      first.addAll(all.subList(0, all.size() / 2));
      second.addAll(all.subList(all.size() / 2, all.size()));
    }
    Map<String, Double> stages =
        new HashMap<>(
            delegate.transfer(transport, new WireGroups(first, List.of(), List.of()), timeout));
    Long victim = armed.get(second.getLast().session());
    if (victim == null) {
      throw new IllegalStateException(
          KIND + ": no pid for the publisher '" + second.getLast().session() + "'");
    }
    ProcessHandle.of(victim)
        .ifPresent(
            trainer -> {
              trainer.destroyForcibly();
              trainer.onExit().join();
            });
    delegate
        .transfer(transport, new WireGroups(second, List.of(), List.of()), timeout)
        .forEach((stage, seconds) -> stages.merge(stage, seconds, Double::sum));
    return stages;
  }

  @Override
  public String toString() {
    return "MidReadKill(" + delegate + ")";
  }
}
