package dev.mx.cli.demo;

import dev.mx.api.transport.MemoryRegistration;
import dev.mx.api.util.Closeables;
import dev.mx.layout.model.ModelArchitecture;
import dev.mx.layout.model.ModelConfigs;
import dev.mx.layout.trainer.AliasShard;
import dev.mx.layout.trainer.QuantizedShards;
import dev.mx.layout.trainer.TrainerBuffers;
import dev.mx.layout.trainer.TrainerRankLayout;
import dev.mx.refit.cast.BlockQuantizer;
import dev.mx.refit.cast.Fp8Rounding;
import dev.mx.refit.cast.QuantFormat;
import dev.mx.refit.publish.Publisher;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.function.LongFunction;

/**
 * What a trainer rank publishing quantized sources ({@code --trainer-dtype fp8-block} ...) serves
 * beside its own buffers: per buffer set, the e4m3fn codes and the scales of its linear weights
 * ({@link QuantizedShards}), quantized from that set after each write. Its own buffers keep the
 * full-precision weights and serve everything else.
 */
final class QuantizedSets implements AutoCloseable {
  private final TrainerRankLayout layout;
  private final QuantizedShards split;
  private final QuantFormat format;
  private final int block;
  private final Fp8Rounding rounding;
  private final List<TrainerBuffers> codes = new ArrayList<>();
  private final List<TrainerBuffers> scales = new ArrayList<>();

  private QuantizedSets(WorkerSpec spec, TrainerRankLayout layout) {
    ModelArchitecture model = ModelConfigs.load(spec.model());
    this.layout = layout;
    this.split =
        QuantizedShards.split(
            layout,
            name -> Fp8Format.quantizedTensor(model, name),
            Fp8Format.tiles(spec.trainerDtype()));
    this.format = Fp8Format.format(spec.trainerDtype());
    this.block = Fp8Format.block(spec.trainerDtype());
    this.rounding = Fp8Format.rounding(spec.trainerDtype());
  }

  /** The quantized sets of rank {@code layout}, or null when {@code spec} publishes none. */
  static QuantizedSets of(WorkerSpec spec, TrainerRankLayout layout) {
    return Fp8Format.quantizedSource(spec) ? new QuantizedSets(spec, layout) : null;
  }

  /** Allocates the codes and scales of one more buffer set from {@code allocator}. */
  void allocate(LongFunction<MemoryRegistration> allocator) {
    TrainerBuffers c = TrainerBuffers.allocate(split.codes(), allocator);
    try {
      scales.add(TrainerBuffers.allocate(split.scales(), allocator));
    } catch (RuntimeException e) {
      c.close();
      throw e;
    }
    codes.add(c);
  }

  /** What buffer set {@code set} publishes: {@code own}'s other tensors, its codes and scales. */
  Consumer<Publisher.Builder> tensors(int set, TrainerBuffers own) {
    return b -> {
      VersionedTrainer.tensors(split.plain(), own).accept(b);
      VersionedTrainer.tensors(split.codes(), codes.get(set)).accept(b);
      VersionedTrainer.tensors(split.scales(), scales.get(set)).accept(b);
    };
  }

  /**
   * Quantizes every linear weight of set {@code set} from {@code own} into its codes and scales.
   * Each shard starts on a tile boundary of its global tensor, so its tiles are the global grid's
   * and the bytes equal those of the whole tensor quantized at once.
   */
  void quantize(int set, TrainerBuffers own, int threads) {
    for (QuantizedShards.Pair p : split.pairs()) {
      BlockQuantizer.quantize(
          own.slice(p.source()),
          layout.dtype(),
          codes.get(set).slice(p.source()),
          scales.get(set).slice(p.scales()),
          p.source().shape(),
          format,
          block,
          false,
          threads,
          rounding);
    }
  }

  /** The shards published besides the rank's own: one scale shard per quantized shard. */
  int extraShards() {
    return split.pairs().size();
  }

  /** Flips one byte of the first scale shard of set {@code set}: bytes only this rank computed. */
  Map<String, Object> corrupt(int set) {
    AliasShard victim = split.scales().aliases().get(0);
    return TrainerWorker.flipMiddleByte(scales.get(set).slice(victim), victim.hfName());
  }

  @Override
  public void close() {
    List<AutoCloseable> order = new ArrayList<>(scales.reversed());
    order.addAll(codes.reversed());
    scales.clear();
    codes.clear();
    Closeables.closeAll(order);
  }
}
