package dev.mx.refit;

import dev.mx.api.plan.FullPullSource;
import dev.mx.api.plan.PullSegment;
import dev.mx.api.plan.TransferPlan;
import dev.mx.api.refit.WireGroups;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.plan.ReshardPlanner;
import dev.mx.refit.stage.DeltaState;
import dev.mx.refit.stage.Descriptors;
import dev.mx.refit.stage.ShardStaging;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;

/**
 * The descriptor stage: every read of one refit into a set of receive buffers, by staging wave
 * (wave 0 holds every exact, full-pull and convert read; destinations validated at prepare).
 *
 * @param staging the plan with its staged shards
 * @param fullStaging where each full pull lands, by source
 * @param convertStaging where each convert lands, by index
 * @param shardStaging where each staged shard lands, by key
 * @param waveOf the staging wave of each staged shard (by key); absent means wave 0
 * @param waveCount how many waves
 * @param sourceIndex which source each read comes from (asked only by delta steps)
 */
record DescriptorStage(
    ShardStaging.Result staging,
    Map<String, MemorySegment> fullStaging,
    Map<Integer, MemorySegment> convertStaging,
    Map<String, MemorySegment> shardStaging,
    Map<String, Integer> waveOf,
    int waveCount,
    Supplier<DeltaState.SourceIndex> sourceIndex) {

  /** The reads into {@code params}, leaving out every read of a source in {@code kept}. */
  List<Descriptors> build(Map<String, MemorySegment> params, Set<String> kept) {
    TransferPlan plan = staging.wirePlan();
    List<PullSegment> exactSegments = plan.segments();
    if (!kept.isEmpty()) {
      exactSegments = new ArrayList<>();
      for (PullSegment s : plan.segments()) {
        if (!kept.contains(sourceIndex.get().sourceOf(s))) {
          exactSegments.add(s);
        }
      }
    }
    List<ReadDescriptor> exact =
        ReshardPlanner.descriptors(exactSegments, param -> params.get(param).address());
    List<ReadDescriptor> full = new ArrayList<>();
    for (FullPullSource f : plan.fullPulls()) {
      if (!kept.contains(f.srcName())) {
        full.addAll(
            ReshardPlanner.descriptors(f.segments(), src -> fullStaging.get(src).address()));
      }
    }
    List<ReadDescriptor> convert = new ArrayList<>();
    for (int i = 0; i < plan.converts().size(); i++) {
      List<PullSegment> segs = plan.converts().get(i).segments();
      if (!segs.isEmpty() && kept.contains(sourceIndex.get().sourceOf(segs.get(0)))) {
        continue;
      }
      long base = convertStaging.get(i).address();
      convert.addAll(ReshardPlanner.descriptors(segs, param -> base));
    }
    List<List<ReadDescriptor>> staged = new ArrayList<>();
    for (int w = 0; w < waveCount; w++) {
      staged.add(new ArrayList<>());
    }
    for (ShardStaging.Staged s : staging.staged()) {
      if (kept.contains(s.source())) {
        continue;
      }
      PullSegment seg = s.segment();
      staged
          .get(waveOf.getOrDefault(s.key(), 0))
          .add(
              new ReadDescriptor(
                  seg.session(),
                  seg.srcAddr(),
                  shardStaging.get(s.key()).address() + seg.dstByte(),
                  seg.nbytes()));
    }
    List<Descriptors> out = new ArrayList<>();
    for (int w = 0; w < waveCount; w++) {
      List<ReadDescriptor> verifiable = new ArrayList<>();
      List<ReadDescriptor> fullAndStaged = new ArrayList<>();
      List<ReadDescriptor> waveExact = List.of();
      List<ReadDescriptor> waveConvert = List.of();
      if (w == 0) {
        waveExact = exact;
        waveConvert = convert;
        verifiable.addAll(exact);
        verifiable.addAll(full);
        verifiable.addAll(convert);
        fullAndStaged.addAll(full);
      }
      fullAndStaged.addAll(staged.get(w));
      long bytes = 0;
      for (ReadDescriptor r : verifiable) {
        bytes += r.nbytes();
      }
      for (ReadDescriptor r : staged.get(w)) {
        bytes += r.nbytes();
      }
      out.add(
          new Descriptors(
              new WireGroups(waveExact, fullAndStaged, waveConvert),
              verifiable,
              waveExact.size() + fullAndStaged.size() + waveConvert.size(),
              bytes));
    }
    return out;
  }
}
