package dev.mx.refit.version;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.WeightVersion;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.api.util.Closeables;
import dev.mx.transport.mem.MemTransportProvider;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.UnaryOperator;

/**
 * A real two-rank trainer for tests: tensor {@code w} (4x4 f32) split by rows over ranks 0 and 1,
 * each rank a {@link VersionedPublisher} over its own {@code mem} transport with two buffer sets in
 * native memory. Step {@code s} writes {@code w[i] = 100 s + i}.
 */
final class TwoRankTrainer implements AutoCloseable {
  static final Shape GLOBAL = Shape.of(4, 4);
  static final List<String> SLOTS = List.of("0", "1");

  final Arena arena = Arena.ofShared();
  final List<Transport> transports = new ArrayList<>();
  final List<VersionedPublisher> ranks = new ArrayList<>();
  final MemorySegment[][] sets = new MemorySegment[2][2];

  TwoRankTrainer(
      MetadataStore store,
      String model,
      Duration leaseWait,
      Consumer<VersionedPublisher.Builder> more) {
    this(store, model, leaseWait, more, t -> t);
  }

  /** As above, each rank's {@code mem} transport wrapped by {@code wrap} (e.g. a test double). */
  TwoRankTrainer(
      MetadataStore store,
      String model,
      Duration leaseWait,
      Consumer<VersionedPublisher.Builder> more,
      UnaryOperator<Transport> wrap) {
    for (int r = 0; r < 2; r++) {
      Transport t =
          wrap.apply(
              new MemTransportProvider().create(TransportConfig.of(model + "-trainer-" + r)));
      transports.add(t);
      int rank = r;
      for (int k = 0; k < 2; k++) {
        sets[r][k] = arena.allocate(8 * 4, 64);
      }
      VersionedPublisher.Builder b =
          VersionedPublisher.builder(t, store)
              .model(model)
              .slot(Integer.toString(r))
              .expectedSlots(SLOTS)
              .workerId("trainer-" + r)
              .rank(r)
              .leaseWait(leaseWait)
              .pollInterval(Duration.ofMillis(20))
              .shutdownHook(false)
              .configure(p -> p.heartbeatInterval(Duration.ofSeconds(30)));
      for (int k = 0; k < 2; k++) {
        MemorySegment seg = sets[r][k];
        b.bufferSet(
            p -> p.tensor("w", DType.F32, GLOBAL, new long[] {2L * rank, 0}, Shape.of(2, 4), seg));
      }
      more.accept(b);
      ranks.add(b.start());
    }
  }

  /** The value of {@code w[i]} at step {@code s}. */
  static float value(long step, int i) {
    return 100f * step + i;
  }

  /** Rank {@code r} publishes step {@code s}. */
  WeightVersion publish(int r, long step) {
    return publish(r, step, () -> {});
  }

  /** Rank {@code r} publishes step {@code s}, running {@code training} in its writer first. */
  WeightVersion publish(int r, long step, Runnable training) {
    return ranks
        .get(r)
        .publish(
            step,
            set -> {
              training.run();
              MemorySegment seg = sets[r][set];
              for (int j = 0; j < 8; j++) {
                seg.setAtIndex(ValueLayout.JAVA_FLOAT, j, value(step, 8 * r + j));
              }
            });
  }

  /** Both ranks publish step {@code s}; returns what the last one saw. */
  WeightVersion publishAll(long step) {
    publish(0, step);
    return publish(1, step);
  }

  @Override
  public void close() {
    List<AutoCloseable> all = new ArrayList<>(ranks);
    all.addAll(transports);
    all.add(arena);
    Closeables.closeAll(all);
  }
}
