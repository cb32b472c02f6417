package dev.mx.refit.stage;

import dev.mx.api.DType;
import dev.mx.api.error.UnverifiableShardException;
import dev.mx.api.plan.ConvertSource;
import dev.mx.api.plan.PullSegment;
import dev.mx.api.plan.RecordedCopy;
import dev.mx.api.plan.Shard;
import dev.mx.api.plan.SourceInfo;
import dev.mx.api.plan.StagedShard;
import dev.mx.api.plan.TransferPlan;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The shard-staging stage: decides which publisher shards land whole in a staging buffer of their own,
 * to be digest-verified before any copy reads them.
 *
 * <p>Two kinds of staged shards come out of it. The planner's {@link TransferPlan#stagedShards()} (the
 * {@code shard} bounding mode) are kept with their shard-relative copies. And, when every installed byte
 * must be verified ({@code mx.receiver.verify=all}), every shard that the exact or convert segments read
 * only in part is staged here: its segments leave the wire and become local byte runs out of the staged,
 * verified shard (one descriptor instead of many, the shard's bytes instead of the parts). Shards the
 * segments read whole stay on the wire and are verified where they land.
 */
public final class ShardStaging {

  /** Bytes {@code [stagingByte, stagingByte + nbytes)} of a staged shard go to byte {@code dstByte} of a target. */
  public record Run(long stagingByte, long dstByte, long nbytes) {}

  /**
   * One shard staged whole. {@code segment} reads it into staging buffer {@code key} at byte 0;
   * {@code paramRuns} (by parameter) and {@code convertRuns} (by convert index) are this receiver's
   * re-routed segments; {@code copies} are the planner's shard-relative copies (empty for re-routed ones).
   */
  public record Staged(String key, String source, int shardIndex, Shard shard, DType dtype, PullSegment segment,
      Map<String, List<Run>> paramRuns, Map<Integer, List<Run>> convertRuns, List<RecordedCopy> copies) {

    /** Bytes this shard's copies and runs move out of staging (an estimate for planner copies: the shard). */
    public long runBytes() {
      long n = 0;
      for (List<Run> rs : paramRuns.values()) {
        for (Run r : rs) {
          n += r.nbytes();
        }
      }
      for (List<Run> rs : convertRuns.values()) {
        for (Run r : rs) {
          n += r.nbytes();
        }
      }
      return n;
    }
  }

  /**
   * The plan as the wire sees it after staging: the exact and convert segments that still go straight to
   * their destinations, and the staged shards.
   */
  public record Result(TransferPlan wirePlan, List<Staged> staged, int restaged) {}

  private ShardStaging() {}

  /**
   * Applies staging to a plan.
   *
   * @param stagePartial re-route segments that read a shard in part through a staged copy of it
   * @throws UnverifiableShardException when a segment reads bytes no published shard of a source holds
   */
  public static Result apply(TransferPlan plan, Map<String, SourceInfo> sources, boolean stagePartial) {
    List<Staged> staged = new ArrayList<>();
    for (int i = 0; i < plan.stagedShards().size(); i++) {
      StagedShard s = plan.stagedShards().get(i);
      staged.add(new Staged(s.segment().paramName(), s.srcName(), s.shardIndex(), s.shard(), s.dtype(),
          s.segment(), Map.of(), Map.of(), s.copies()));
    }
    if (!stagePartial) {
      return new Result(plan, staged, 0);
    }
    ShardIndex index = new ShardIndex(sources);
    // Every exact and convert segment, attributed to the shard it reads from.
    Map<ShardIndex.Ref, long[]> coveredBytes = new HashMap<>();
    Map<ShardIndex.Ref, List<long[]>> ranges = new HashMap<>();
    attribute(plan.segments(), index, coveredBytes, ranges);
    for (ConvertSource c : plan.converts()) {
      attribute(c.segments(), index, coveredBytes, ranges);
    }
    Map<ShardIndex.Ref, Builder> partial = new LinkedHashMap<>();
    for (Map.Entry<ShardIndex.Ref, List<long[]>> e : ranges.entrySet()) {
      if (!coversWhole(e.getValue(), e.getKey().shard().byteSize())) {
        partial.put(e.getKey(), new Builder(e.getKey()));
      }
    }
    if (partial.isEmpty()) {
      return new Result(plan, staged, 0);
    }
    List<PullSegment> exact = new ArrayList<>(plan.segments().size());
    for (PullSegment s : plan.segments()) {
      Builder b = partial.get(index.find(s));
      if (b == null) {
        exact.add(s);
      } else {
        b.paramRuns.computeIfAbsent(s.paramName(), k -> new ArrayList<>())
            .add(new Run(s.srcAddr() - b.ref.shard().addr(), s.dstByte(), s.nbytes()));
      }
    }
    List<ConvertSource> converts = new ArrayList<>(plan.converts().size());
    for (int i = 0; i < plan.converts().size(); i++) {
      ConvertSource c = plan.converts().get(i);
      List<PullSegment> kept = new ArrayList<>();
      for (PullSegment s : c.segments()) {
        Builder b = partial.get(index.find(s));
        if (b == null) {
          kept.add(s);
        } else {
          b.convertRuns.computeIfAbsent(i, k -> new ArrayList<>())
              .add(new Run(s.srcAddr() - b.ref.shard().addr(), s.dstByte(), s.nbytes()));
        }
      }
      converts.add(new ConvertSource(c.paramName(), c.destShape(), c.srcDtype(), kept));
    }
    int n = staged.size();
    for (Builder b : partial.values()) {
      String key = "stage#" + (n++) + ":" + b.ref.source();
      Shard sh = b.ref.shard();
      staged.add(new Staged(key, b.ref.source(), b.ref.index(), sh, sources.get(b.ref.source()).dtype(),
          new PullSegment(sh.session(), sh.addr(), key, 0, sh.byteSize()), Map.copyOf(b.paramRuns),
          Map.copyOf(b.convertRuns), List.of()));
    }
    TransferPlan wire = new TransferPlan(exact, plan.fallback(), converts, plan.fullPulls(), plan.unboundedSources(),
        plan.exactDescriptorCount(), plan.exactBytes(), plan.fallbackReasons(), plan.stagedShards());
    return new Result(wire, staged, partial.size());
  }

  private static void attribute(List<PullSegment> segments, ShardIndex index, Map<ShardIndex.Ref, long[]> covered,
      Map<ShardIndex.Ref, List<long[]>> ranges) {
    for (PullSegment s : segments) {
      if (s.nbytes() == 0) {
        continue;
      }
      ShardIndex.Ref ref = index.find(s);
      if (ref == null) {
        throw new UnverifiableShardException(s.paramName(), new long[0], s.session(), "a segment reads bytes ["
            + s.srcAddr() + ", " + (s.srcAddr() + s.nbytes()) + ") that no published shard of session '"
            + s.session() + "' holds, so they cannot be verified");
      }
      long lo = s.srcAddr() - ref.shard().addr();
      ranges.computeIfAbsent(ref, k -> new ArrayList<>()).add(new long[] {lo, lo + s.nbytes()});
    }
  }

  private static boolean coversWhole(List<long[]> r, long size) {
    r.sort(Comparator.comparingLong(a -> a[0]));
    long until = 0;
    for (long[] x : r) {
      if (x[0] > until) {
        return false;
      }
      until = Math.max(until, x[1]);
    }
    return until >= size;
  }

  private static final class Builder {
    final ShardIndex.Ref ref;
    final Map<String, List<Run>> paramRuns = new LinkedHashMap<>();
    final Map<Integer, List<Run>> convertRuns = new LinkedHashMap<>();

    Builder(ShardIndex.Ref ref) {
      this.ref = ref;
    }
  }

  /** Finds the published shard whose bytes hold a segment's source range, by session and address. */
  static final class ShardIndex {
    record Ref(String source, int index, Shard shard) {}

    private final Map<String, Ref[]> bySession = new HashMap<>();
    private final Map<String, long[]> starts = new HashMap<>();

    ShardIndex(Map<String, SourceInfo> sources) {
      Map<String, List<Ref>> lists = new HashMap<>();
      sources.forEach((name, info) -> {
        for (int i = 0; i < info.shards().size(); i++) {
          Shard s = info.shards().get(i);
          if (s.byteSize() > 0) {
            lists.computeIfAbsent(s.session(), k -> new ArrayList<>()).add(new Ref(name, i, s));
          }
        }
      });
      lists.forEach((session, refs) -> {
        refs.sort(Comparator.comparingLong(r -> r.shard().addr()));
        bySession.put(session, refs.toArray(new Ref[0]));
        starts.put(session, refs.stream().mapToLong(r -> r.shard().addr()).toArray());
      });
    }

    /** The shard holding all of {@code s}'s bytes, or null. */
    Ref find(PullSegment s) {
      long[] st = starts.get(s.session());
      if (st == null) {
        return null;
      }
      int i = Arrays.binarySearch(st, s.srcAddr());
      i = i >= 0 ? i : -i - 2;
      // Aliased shards may share a start; take the first that holds the whole segment.
      for (int k = Math.max(0, i); k >= 0 && k < st.length && st[k] <= s.srcAddr(); k--) {
        Ref r = bySession.get(s.session())[k];
        if (s.srcAddr() + s.nbytes() <= r.shard().addr() + r.shard().byteSize()) {
          return r;
        }
        if (k == 0) {
          break;
        }
      }
      return null;
    }
  }
}
