package dev.mx.refit.stage;

import dev.mx.api.DType;
import dev.mx.api.annotation.Internal;
import dev.mx.api.memory.MemoryOps;
import dev.mx.api.plan.ConvertSource;
import dev.mx.api.plan.FullPullSource;
import dev.mx.api.plan.RecordedCopy;
import dev.mx.api.refit.ParamSpec;
import dev.mx.refit.reslice.AsStrided;
import dev.mx.refit.reslice.Reslicer;
import dev.mx.refit.reslice.ViewCopy;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;

/**
 * The re-slice and cast stages, compiled once per set of receive buffers: copies out of full-pull
 * staging (re-slice), casts out of convert staging, and the work of each staged shard. The kernels
 * themselves live in {@code reslice} and {@code cast}; this class only decides what runs where.
 */
@Internal
public final class LocalCopies {
  private final List<ViewCopy> reslice;
  private final boolean resliceDisjoint;
  private final List<ViewCopy> converts;
  private final boolean convertsDisjoint;
  private final List<StagedWork> staged;

  /** Device copies are one kernel launch each, run in order: never split across CPU workers. */
  private final boolean onDevice;

  private LocalCopies(
      List<ViewCopy> reslice, List<ViewCopy> converts, List<StagedWork> staged, boolean onDevice) {
    this.onDevice = onDevice;
    this.reslice = List.copyOf(reslice);
    this.resliceDisjoint = Reslicer.destinationsDisjoint(this.reslice);
    this.converts = List.copyOf(converts);
    this.convertsDisjoint = Reslicer.destinationsDisjoint(this.converts);
    this.staged = List.copyOf(staged);
  }

  /** Where the compiled copies read from and write to. */
  public record Buffers(
      Map<String, MemorySegment> params,
      Map<String, MemorySegment> fullStaging,
      Map<Integer, MemorySegment> convertStaging,
      Map<String, MemorySegment> shardStaging) {}

  /**
   * Compiles every local copy of a plan against one set of buffers.
   *
   * @param verifyStaged per staged shard, whether its digest is checked before its copies run
   * @throws IllegalArgumentException when a copy's dtype disagrees with the parameter layout, or a
   *     view reaches outside its buffer
   */
  public static LocalCopies compile(
      ShardStaging.Result staging,
      List<ConvertMatch.Target> convertTargets,
      Map<String, ParamSpec> layout,
      Buffers b,
      java.util.function.Predicate<ShardStaging.Staged> verifyStaged) {
    return compile(staging, convertTargets, layout, b, verifyStaged, null);
  }

  /**
   * As {@link #compile(ShardStaging.Result, List, Map, Buffers, java.util.function.Predicate)} over
   * buffers in device memory when {@code device} is not null: every re-slice, cast and staged copy
   * then runs on the device through {@code device}'s operations.
   */
  public static LocalCopies compile(
      ShardStaging.Result staging,
      List<ConvertMatch.Target> convertTargets,
      Map<String, ParamSpec> layout,
      Buffers b,
      java.util.function.Predicate<ShardStaging.Staged> verifyStaged,
      MemoryOps device) {
    List<ViewCopy> reslice = new ArrayList<>();
    for (FullPullSource f : staging.wirePlan().fullPulls()) {
      MemorySegment src = b.fullStaging().get(f.srcName());
      for (RecordedCopy c : f.copies()) {
        reslice.add(
            ViewCopy.compile(
                "full pull '"
                    + f.srcName()
                    + "' "
                    + c.opChain()
                    + " -> param '"
                    + c.paramName()
                    + "'",
                src,
                f.dtype(),
                AsStrided.replay(f.globalShape(), c.opChain(), f.srcName()),
                b.params().get(c.paramName()),
                destinationType(layout, c.paramName(), c.destDtype()),
                AsStrided.destinationOf(c),
                device));
      }
    }
    List<ViewCopy> converts = new ArrayList<>();
    List<ConvertSource> cs = staging.wirePlan().converts();
    for (int i = 0; i < cs.size(); i++) {
      ConvertSource c = cs.get(i);
      ConvertMatch.Target t = convertTargets.get(i);
      DType to = destinationType(layout, c.paramName(), t.dtype());
      converts.add(
          ViewCopy.compile(
              "convert '" + c.paramName() + "' " + c.srcDtype() + " -> " + to,
              b.convertStaging().get(i),
              c.srcDtype(),
              AsStrided.contiguous(c.destShape()),
              b.params().get(c.paramName()),
              to,
              t.view(),
              device));
    }
    List<StagedWork> works = new ArrayList<>();
    for (ShardStaging.Staged s : staging.staged()) {
      MemorySegment src = b.shardStaging().get(s.key());
      List<ViewCopy> copies = new ArrayList<>();
      for (RecordedCopy c : s.copies()) {
        copies.add(
            ViewCopy.compile(
                "staged shard "
                    + s.shardIndex()
                    + " of '"
                    + s.source()
                    + "' "
                    + c.opChain()
                    + " -> param '"
                    + c.paramName()
                    + "'",
                src,
                s.dtype(),
                AsStrided.replay(s.shard().shape(), c.opChain(), s.source()),
                b.params().get(c.paramName()),
                destinationType(layout, c.paramName(), c.destDtype()),
                AsStrided.destinationOf(c),
                device));
      }
      List<StagedWork.ByteRun> runs = new ArrayList<>();
      s.paramRuns()
          .forEach(
              (param, rs) -> {
                MemorySegment dst = b.params().get(param);
                for (ShardStaging.Run r : rs) {
                  runs.add(checked(s, src, dst, "param '" + param + "'", r));
                }
              });
      s.convertRuns()
          .forEach(
              (index, rs) -> {
                MemorySegment dst = b.convertStaging().get(index);
                for (ShardStaging.Run r : rs) {
                  runs.add(checked(s, src, dst, "convert staging #" + index, r));
                }
              });
      works.add(new StagedWork(s, src, copies, runs, verifyStaged.test(s), device));
    }
    return new LocalCopies(reslice, converts, works, device != null);
  }

  private static StagedWork.ByteRun checked(
      ShardStaging.Staged s,
      MemorySegment src,
      MemorySegment dst,
      String what,
      ShardStaging.Run r) {
    if (dst == null
        || r.stagingByte() < 0
        || r.stagingByte() + r.nbytes() > src.byteSize()
        || r.dstByte() + r.nbytes() > dst.byteSize()) {
      throw new IllegalArgumentException(
          "staged shard "
              + s.shardIndex()
              + " of '"
              + s.source()
              + "': a run of "
              + r.nbytes()
              + " bytes from staging byte "
              + r.stagingByte()
              + " to byte "
              + r.dstByte()
              + " of "
              + what
              + " reaches outside a buffer");
    }
    return new StagedWork.ByteRun(r.stagingByte(), dst, r.dstByte(), r.nbytes());
  }

  private static DType destinationType(
      Map<String, ParamSpec> layout, String param, DType copyType) {
    ParamSpec spec = layout.get(param);
    if (spec == null || spec.dtype() != copyType) {
      throw new IllegalArgumentException(
          "a copy writes parameter '"
              + param
              + "' as "
              + copyType
              + " but the parameter layout says "
              + (spec == null ? "nothing about it" : spec.dtype()));
    }
    return copyType;
  }

  public List<StagedWork> staged() {
    return staged;
  }

  public int resliceCount() {
    return reslice.size();
  }

  public int convertCount() {
    return converts.size();
  }

  /**
   * Re-slice of full pulls (batched across workers when destinations are disjoint and batching is
   * on).
   */
  public void reslice(boolean batch, ExecutorService workers, int threads) {
    run(reslice, batch && resliceDisjoint && !onDevice, workers, threads);
  }

  /** Casts out of convert staging. */
  public void casts(boolean batch, ExecutorService workers, int threads) {
    run(converts, batch && convertsDisjoint && !onDevice, workers, threads);
  }

  private static void run(
      List<ViewCopy> copies, boolean batched, ExecutorService workers, int threads) {
    if (copies.isEmpty()) {
      return;
    }
    if (batched) {
      Reslicer.runBatched(copies, workers, threads);
    } else {
      Reslicer.runSequential(copies);
    }
  }
}
