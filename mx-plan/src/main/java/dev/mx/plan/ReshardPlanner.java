package dev.mx.plan;

import dev.mx.api.Shape;
import dev.mx.api.error.UnsupportedReshardException;
import dev.mx.api.plan.BoundingDecision;
import dev.mx.api.plan.BoundingMode;
import dev.mx.api.plan.CaptureResult;
import dev.mx.api.plan.ConvertSource;
import dev.mx.api.plan.FullPullSource;
import dev.mx.api.plan.PlanBuilder;
import dev.mx.api.plan.PullSegment;
import dev.mx.api.plan.RecordedCopy;
import dev.mx.api.plan.Shard;
import dev.mx.api.plan.SourceInfo;
import dev.mx.api.plan.StagedShard;
import dev.mx.api.plan.TransferPlan;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.api.util.Settings;
import dev.mx.plan.view.StridedView;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.function.ToLongFunction;

/**
 * The reshard planner (ModelExpress; ARCHITECTURE §7.3): resolves every recorded copy to a box of
 * its source, intersects it with the published shards, emits contiguous byte runs, routes dtype
 * mismatches through convert staging, and bounds descriptor-heavy sources with full pulls.
 *
 * <p>Sources that cannot be planned go to the plan's fallback list with a reason, in order and
 * without duplicates; malformed input (a shard outside its source, overlapping shards of different
 * geometry, {@code max_segments_per_copy < 1}) is an {@link IllegalArgumentException} naming the
 * source and shard. Once a source falls back, none of its copies is planned: a fallback source is
 * never fetched.
 *
 * <p>Exact segment counts are computed arithmetically before any segment is built, so a source that
 * ends up pulled whole never materializes the thousands of exact segments that made it
 * descriptor-heavy. Exact segments are kept column-wise in a {@link SegmentList}.
 *
 * <p>A planner holds no state besides its settings: one instance may plan on many threads at once.
 */
public final class ReshardPlanner implements PlanBuilder {
  /** Environment variable of the bounding threshold (ModelExpress' name). */
  public static final String MAX_SEGMENTS_ENV = PlanSetting.MAX_SEGMENTS_PER_COPY.env();

  /** System property of the bounding threshold; wins over the environment variable. */
  public static final String MAX_SEGMENTS_PROPERTY = PlanSetting.MAX_SEGMENTS_PER_COPY.property();

  public static final int DEFAULT_MAX_SEGMENTS_PER_COPY =
      Integer.parseInt(PlanSetting.MAX_SEGMENTS_PER_COPY.defaultValue());

  /** The reason recorded for a capture-time failure whose cause the capture did not keep. */
  public static final String CAUSE_NOT_RECORDED = "cause not recorded at capture";

  /** The prefix of a strict staged planning failure (ModelExpress; ARCHITECTURE §7.3). */
  public static final String STAGED_UNRECOVERABLE =
      "strict staged verification cannot reconstruct the complete published source";

  private final Settings settings;

  /** A planner reading its default threshold from the live system properties and environment. */
  public ReshardPlanner() {
    this(Settings.system());
  }

  public ReshardPlanner(Settings settings) {
    this.settings = Objects.requireNonNull(settings, "settings");
  }

  /**
   * The bounding threshold, read now: {@code -Dmx.reshard.max-segments-per-copy}, else {@code
   * MX_RESHARD_MAX_SEGMENTS_PER_COPY}, else 64.
   *
   * @throws IllegalArgumentException when the configured value is below 1
   */
  public int maxSegmentsPerCopy() {
    int v =
        settings.integer(MAX_SEGMENTS_PROPERTY, MAX_SEGMENTS_ENV, DEFAULT_MAX_SEGMENTS_PER_COPY);
    requireThreshold(v, MAX_SEGMENTS_ENV + "=" + v);
    return v;
  }

  /** Plans with the threshold of {@link #maxSegmentsPerCopy()}. */
  public TransferPlan plan(CaptureResult capture, Map<String, SourceInfo> sources) {
    return plan(capture, sources, maxSegmentsPerCopy());
  }

  @Override
  public TransferPlan plan(
      CaptureResult capture, Map<String, SourceInfo> sources, int maxSegmentsPerCopy) {
    requireThreshold(maxSegmentsPerCopy, "max_segments_per_copy " + maxSegmentsPerCopy);
    return guarded(
        () ->
            new Planning(capture, sources, maxSegmentsPerCopy, false, null, descriptorLimit())
                .run());
  }

  /**
   * Plans with explicit options, after checking the inputs ({@link PlanInputCheck}: shard tiling
   * unless a source is partial, addresses, byte counts, aliasing destinations). {@link
   * BoundingMode#MODELEXPRESS} produces exactly the plan of {@link #plan(CaptureResult, Map, int)}
   * at {@code options.maxSegmentsPerCopy()}; {@link BoundingMode#SHARD} lets a cost model choose
   * per source between exact segments, shard staging and a whole-source full pull, and records each
   * choice in {@link TransferPlan#boundingDecisions()}.
   *
   * @throws PlanInputException naming the JSON path of an invalid input
   * @throws IllegalArgumentException when the plan would need more than {@code
   *     options.maxDescriptors()}
   */
  public TransferPlan plan(
      CaptureResult capture, Map<String, SourceInfo> sources, PlanOptions options) {
    Objects.requireNonNull(options, "options");
    PlanInputCheck.check(capture, sources);
    boolean shard = options.bounding() == BoundingMode.SHARD;
    return guarded(
        () ->
            new Planning(
                    capture,
                    sources,
                    options.maxSegmentsPerCopy(),
                    false,
                    shard ? options : null,
                    options.maxDescriptors())
                .run());
  }

  /** Sums of counts that overflow a long become a named input error, not an ArithmeticException. */
  private static TransferPlan guarded(java.util.function.Supplier<TransferPlan> run) {
    try {
      return run.get();
    } catch (ArithmeticException e) {
      throw new IllegalArgumentException(
          "the plan's element or byte counts overflow a 64-bit integer ("
              + e.getMessage()
              + "): the input shapes are too large",
          e);
    }
  }

  private long descriptorLimit() {
    String v = settings.get(PlanOptions.MAX_DESCRIPTORS_PROPERTY, PlanOptions.MAX_DESCRIPTORS_ENV);
    if (v == null || v.isBlank()) {
      return PlanOptions.DEFAULT_MAX_DESCRIPTORS;
    }
    try {
      return Long.parseLong(v.trim());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          PlanOptions.MAX_DESCRIPTORS_PROPERTY + " = '" + v + "': not an integer", e);
    }
  }

  /**
   * Strict staged planning (ModelExpress; ARCHITECTURE §7.3), for receivers that digest-verify
   * every published shard: a source with at least one directly recoverable copy (empty op chain,
   * destination shape = global shape) is planned normally; every other source is pulled whole (an
   * identity copy over any shard layout) and all its copies are replayed locally from the staging
   * buffer (casting there when the copy's dtype differs).
   *
   * @throws UnsupportedReshardException starting with {@link #STAGED_UNRECOVERABLE} when a source
   *     cannot be pulled whole
   */
  public TransferPlan planStaged(CaptureResult capture, Map<String, SourceInfo> sources) {
    return guarded(
        () ->
            new Planning(capture, sources, maxSegmentsPerCopy(), true, null, descriptorLimit())
                .run());
  }

  private static void requireThreshold(int value, String what) {
    if (value < 1) {
      throw new IllegalArgumentException(what + ": max_segments_per_copy must be at least 1");
    }
  }

  /**
   * {@code plan_pull} of ModelExpress (ARCHITECTURE §7.3): the exact segments of one copy, in shard
   * order then row-major run order.
   *
   * @throws UnsupportedReshardException when the dtypes differ ("conversion required") or the chain
   *     does not resolve to a box
   */
  public static List<PullSegment> planPull(RecordedCopy copy, SourceInfo source) {
    if (source.dtype() != copy.destDtype()) {
      throw new UnsupportedReshardException(
          copy.srcName(),
          "conversion required: source is "
              + source.dtype().torchLabel()
              + ", destination '"
              + copy.paramName()
              + "' is "
              + copy.destDtype().torchLabel());
    }
    SourceGeometry geo = SourceGeometry.of(copy.srcName(), source);
    ContiguousRuns runs = new ContiguousRuns(geo.rank);
    ResolvedCopy r = ResolvedCopy.of(copy, geo, runs);
    SegmentList.Builder out = new SegmentList.Builder((int) Math.min(r.count, 1 << 20));
    r.emit(geo, runs, out);
    return out.build();
  }

  /**
   * {@code _full_pull_segments} of ModelExpress (ARCHITECTURE §7.3): one segment per shard into a
   * contiguous staging of the global shape, accepted only for a gap-free, overlap-free partition
   * along dim 0.
   *
   * @throws UnsupportedReshardException when the shards are no such partition (or the source is a
   *     scalar)
   */
  public static List<PullSegment> fullPullSegments(String name, SourceInfo source) {
    return dim0Partition(SourceGeometry.of(name, source));
  }

  private static List<PullSegment> dim0Partition(SourceGeometry geo) {
    List<PullSegment> out = new ArrayList<>(geo.shards.length);
    String gap = dim0Partition(geo, out);
    if (gap != null) {
      throw new UnsupportedReshardException(geo.name, gap);
    }
    return out;
  }

  /**
   * Appends the dim-0 partition's segments to {@code out} and returns null, or returns why the
   * shards are no such partition (without throwing: shard bounding asks this of every source).
   */
  static String dim0Partition(SourceGeometry geo, List<PullSegment> out) {
    String name = geo.name;
    if (geo.rank == 0) {
      return "a scalar source cannot be pulled as a dim-0 partition";
    }
    long trailing = 1;
    for (int d = 1; d < geo.rank; d++) {
      trailing *= geo.global[d];
    }
    Integer[] order = new Integer[geo.shards.length];
    for (int i = 0; i < order.length; i++) {
      order[i] = i;
    }
    if (order.length > 1) {
      Arrays.sort(order, Comparator.comparingLong(i -> geo.lo[i][0]));
    }
    int elsize = geo.info.elsize();
    long nextRow = 0;
    for (int i : order) {
      Shard s = geo.shards[i];
      for (int d = 1; d < geo.rank; d++) {
        if (geo.lo[i][d] != 0 || geo.hi[i][d] != geo.global[d]) {
          return "shard #"
              + i
              + " (session '"
              + s.session()
              + "', offset "
              + Arrays.toString(geo.lo[i])
              + ", shape "
              + s.shape()
              + ") does not span dim "
              + d
              + " of the global shape "
              + geo.info.globalShape()
              + ": the shards are no dim-0 partition";
        }
      }
      long row = geo.lo[i][0];
      if (row != nextRow) {
        return "shard #"
            + i
            + " (session '"
            + s.session()
            + "') starts at row "
            + row
            + " where row "
            + nextRow
            + " was expected: the shards "
            + (row < nextRow ? "overlap (an undeduplicated replica?)" : "leave a gap")
            + ", no dim-0 partition";
      }
      long rows = geo.hi[i][0] - row;
      out.add(
          new PullSegment(
              s.session(), s.addr(), name, row * trailing * elsize, rows * trailing * elsize));
      nextRow += rows;
    }
    if (nextRow != geo.global[0]) {
      return "the shards cover rows 0.."
          + nextRow
          + " of "
          + geo.global[0]
          + ": no complete dim-0 partition";
    }
    return null;
  }

  /** An identity copy of the whole source into a contiguous staging buffer (any shard layout). */
  static List<PullSegment> identityPullSegments(SourceGeometry geo) {
    return identityPull(geo);
  }

  /**
   * The number of segments {@link #identityPull} would emit, computed; throws for a source with
   * holes.
   */
  static long identityPullCount(SourceGeometry geo) {
    Shape g = geo.info.globalShape();
    if (geo.distinctVolume() < g.numel()) {
      throw new UnsupportedReshardException(
          geo.name,
          "the published shards hold "
              + geo.distinctVolume()
              + " of the "
              + g.numel()
              + " elements of the source: it has holes");
    }
    RecordedCopy identity =
        new RecordedCopy(
            geo.name, List.of(), geo.name, 0, g, g.rowMajorStrides(), geo.info.dtype());
    return ResolvedCopy.of(identity, geo, new ContiguousRuns(geo.rank)).count;
  }

  private static List<PullSegment> identityPull(SourceGeometry geo) {
    Shape g = geo.info.globalShape();
    RecordedCopy identity =
        new RecordedCopy(
            geo.name, List.of(), geo.name, 0, g, g.rowMajorStrides(), geo.info.dtype());
    ContiguousRuns runs = new ContiguousRuns(geo.rank);
    ResolvedCopy r = ResolvedCopy.of(identity, geo, runs);
    SegmentList.Builder out = new SegmentList.Builder((int) Math.min(r.count, 1 << 20));
    r.emit(geo, runs, out);
    long covered = geo.distinctVolume();
    long needed = g.numel();
    if (covered < needed) {
      throw new UnsupportedReshardException(
          geo.name,
          "the published shards hold "
              + covered
              + " of the "
              + needed
              + " elements of the source: it has holes");
    }
    return out.build();
  }

  /**
   * {@code exact_descriptors} of ModelExpress (ARCHITECTURE §7.3): one read per {@code
   * plan.segments()} element, in order, landing at {@code paramBase(param) + dstByte}.
   */
  public static List<ReadDescriptor> exactDescriptors(
      TransferPlan plan, ToLongFunction<String> paramBase) {
    return descriptors(plan.segments(), paramBase);
  }

  /**
   * Reads for any segment list (exact, full-pull or convert segments): {@code base} maps the
   * segment's destination name (parameter, or source name for full pulls, or parameter for
   * converts) to the absolute address of the buffer it lands in, called once per distinct name. The
   * result is compact (columns shared with the plan's {@link SegmentList}) and immutable; each
   * {@code get} builds the record.
   */
  public static List<ReadDescriptor> descriptors(
      List<PullSegment> segments, ToLongFunction<String> base) {
    if (segments instanceof SegmentList list) {
      return list.toDescriptors(base);
    }
    // short lists (a full pull's one segment per shard, a convert's few): build directly
    List<ReadDescriptor> out = new ArrayList<>(segments.size());
    String last = null;
    long lastBase = 0;
    for (PullSegment s : segments) {
      if (!s.paramName().equals(last)) {
        last = s.paramName();
        lastBase = base.applyAsLong(last);
      }
      out.add(new ReadDescriptor(s.session(), s.srcAddr(), lastBase + s.dstByte(), s.nbytes()));
    }
    return out;
  }

  /**
   * {@code summarize_unsupported} of ModelExpress (ARCHITECTURE §7.3): groups reasons by the text
   * before the first {@code " on lazy "} (trimmed), counts them, sorts by count (descending) then
   * cause, and keeps the first {@code limit} (all when null).
   */
  public static List<UnsupportedCause> summarizeUnsupported(
      Collection<String> reasons, Integer limit) {
    Map<String, Integer> counts = new HashMap<>();
    for (String r : reasons) {
      String text = r == null ? "" : r;
      int cut = text.indexOf(" on lazy ");
      String cause = (cut >= 0 ? text.substring(0, cut) : text).trim();
      counts.merge(cause, 1, Integer::sum);
    }
    List<UnsupportedCause> out = new ArrayList<>();
    counts.forEach((c, n) -> out.add(new UnsupportedCause(c, n)));
    out.sort(
        Comparator.comparingInt(UnsupportedCause::count)
            .reversed()
            .thenComparing(UnsupportedCause::cause));
    return limit == null || limit >= out.size()
        ? out
        : new ArrayList<>(out.subList(0, Math.max(0, limit)));
  }

  /**
   * As {@link #summarizeUnsupported(Collection, Integer)} over the reasons of a {@code {source:
   * reason}} map.
   */
  public static List<UnsupportedCause> summarizeUnsupported(
      Map<String, String> reasons, Integer limit) {
    return summarizeUnsupported(reasons.values(), limit);
  }

  /**
   * A copy resolved to its needed box, with its exact segment count and bytes (computed, not
   * built).
   */
  record ResolvedCopy(
      RecordedCopy copy,
      long[] lo,
      long[] hi,
      long[] dstStride,
      int[] perm,
      long count,
      long bytes) {

    static ResolvedCopy of(RecordedCopy copy, SourceGeometry geo, ContiguousRuns runs) {
      SliceResolver.RawSlice need = SliceResolver.resolveRaw(copy, geo.global);
      long[] lo = need.lo();
      long[] hi = need.hi();
      long[] ds = need.destStrideSrc();
      long count = 0;
      long elements = 0;
      for (int i = 0; i < geo.shards.length; i++) {
        if (runs.overlap(lo, hi, geo.lo[i], geo.hi[i], geo.strides[i], ds)) {
          count = Math.addExact(count, runs.count());
          elements = Math.addExact(elements, runs.elements());
        }
      }
      return new ResolvedCopy(
          copy, lo, hi, ds, need.perm(), count, Math.multiplyExact(elements, geo.info.elsize()));
    }

    void emit(SourceGeometry geo, ContiguousRuns runs, SegmentList.Builder out) {
      int elsize = geo.info.elsize();
      for (int i = 0; i < geo.shards.length; i++) {
        if (runs.overlap(lo, hi, geo.lo[i], geo.hi[i], geo.strides[i], dstStride)) {
          Shard s = geo.shards[i];
          runs.emit(
              out, s.session(), s.addr(), s.elsize(), copy.paramName(), copy.destOffset(), elsize);
        }
      }
    }
  }

  /** Everything planned for one source. */
  private static final class SourceState {
    final SourceGeometry geo;
    final List<ResolvedCopy> exact = new ArrayList<>();
    final List<RecordedCopy> replayed = new ArrayList<>();

    /**
     * Shard mode: copies that are no box of the source (the reason of the first), replayed from a
     * full pull.
     */
    final List<RecordedCopy> replayOnly = new ArrayList<>();

    String replayOnlyReason;
    ShardBounding.Choice choice;

    /**
     * Shard mode: dtype-changing copies resolved against their real destination, and their exact
     * cost.
     */
    final List<ResolvedCopy> converted = new ArrayList<>();

    long convertCount;
    long convertBytes;
    boolean bound;
    boolean listed;
    long exactCount;
    long exactBytes;

    SourceState(SourceGeometry geo) {
      this.geo = geo;
    }
  }

  /**
   * A convert: built at once in ModelExpress mode; in shard mode kept as its resolved staging copy
   * until the source's decision says whether it is read exactly (then built) or out of staged
   * shards / a full pull.
   */
  private record PlannedConvert(
      String source, ConvertSource convert, ResolvedCopy deferred, RecordedCopy copy) {}

  /** One planning run. */
  private static final class Planning {
    private final CaptureResult capture;
    private final Map<String, SourceInfo> sources;
    private final int max;
    private final boolean staged;
    private final Map<String, String> fallback = new LinkedHashMap<>();
    private final Map<String, SourceState> states = new HashMap<>();

    /** Sources in the order of their first exact (or, staged, forced) entry. */
    private final List<SourceState> order = new ArrayList<>();

    private final List<PlannedConvert> converts = new ArrayList<>();
    private final Set<String> forced = new HashSet<>();
    private ContiguousRuns[] runsByRank = new ContiguousRuns[8];

    /** Shard-mode options, or null for ModelExpress bounding. */
    private final PlanOptions shard;

    private final long maxDescriptors;
    private long convertDescriptors;

    Planning(
        CaptureResult capture,
        Map<String, SourceInfo> sources,
        int max,
        boolean staged,
        PlanOptions shard,
        long maxDescriptors) {
      this.capture = Objects.requireNonNull(capture, "capture");
      this.sources = Objects.requireNonNull(sources, "sources");
      this.max = max;
      this.staged = staged;
      this.shard = shard;
      this.maxDescriptors = maxDescriptors;
    }

    private void requireDescriptors(long n, String what) {
      if (n > maxDescriptors) {
        throw new IllegalArgumentException(
            "the plan needs "
                + n
                + " "
                + what
                + " descriptors, more than the limit of "
                + maxDescriptors
                + " (-D"
                + PlanOptions.MAX_DESCRIPTORS_PROPERTY
                + " / "
                + PlanOptions.MAX_DESCRIPTORS_ENV
                + "); lower max_segments_per_copy or use shard bounding so that heavy sources are pulled whole");
      }
    }

    TransferPlan run() {
      for (String name : capture.unsupported()) {
        fallback.putIfAbsent(
            name, capture.unsupportedReasons().getOrDefault(name, CAUSE_NOT_RECORDED));
      }
      if (staged) {
        findForcedSources();
      }
      for (RecordedCopy copy : capture.copies()) {
        planCopy(copy);
      }
      return assemble();
    }

    /** Staged mode: published sources none of whose copies reads the whole source as is. */
    private void findForcedSources() {
      Map<String, Boolean> recoverable = new HashMap<>();
      for (RecordedCopy c : capture.copies()) {
        SourceInfo info = sources.get(c.srcName());
        if (info == null) {
          continue;
        }
        boolean direct = c.opChain().isEmpty() && c.destShape().equals(info.globalShape());
        recoverable.merge(c.srcName(), direct, Boolean::logicalOr);
      }
      recoverable.forEach(
          (name, direct) -> {
            if (!direct) {
              forced.add(name);
            }
          });
    }

    private void planCopy(RecordedCopy copy) {
      String name = copy.srcName();
      if (fallback.containsKey(name)) {
        return;
      }
      SourceInfo info = sources.get(name);
      if (info == null) {
        fallback.put(
            name,
            "source '" + name + "' is not published by any trainer (no shard table offers it)");
        return;
      }
      SourceState st =
          states.computeIfAbsent(name, n -> new SourceState(SourceGeometry.of(n, info)));
      try {
        if (forced.contains(name)) {
          replayLocally(st, copy);
        } else if (info.dtype() != copy.destDtype() && shard != null) {
          ResolvedCopy r = ResolvedCopy.of(stagingCopy(copy, info), st.geo, runs(st.geo.rank));
          st.converted.add(ResolvedCopy.of(copy, st.geo, runs(st.geo.rank)));
          st.convertCount = Math.addExact(st.convertCount, r.count);
          st.convertBytes = Math.addExact(st.convertBytes, r.bytes);
          st.exactCount = Math.addExact(st.exactCount, r.count);
          st.exactBytes = Math.addExact(st.exactBytes, r.bytes);
          converts.add(new PlannedConvert(name, null, r, copy));
          list(st);
        } else if (info.dtype() != copy.destDtype()) {
          ResolvedCopy r = ResolvedCopy.of(stagingCopy(copy, info), st.geo, runs(st.geo.rank));
          convertDescriptors = Math.addExact(convertDescriptors, r.count);
          requireDescriptors(convertDescriptors, "convert");
          SegmentList.Builder segs = new SegmentList.Builder((int) Math.min(r.count, 1 << 16));
          r.emit(st.geo, runs(st.geo.rank), segs);
          st.exactCount = Math.addExact(st.exactCount, r.count);
          st.exactBytes = Math.addExact(st.exactBytes, r.bytes);
          converts.add(
              new PlannedConvert(
                  name,
                  new ConvertSource(copy.paramName(), copy.destShape(), info.dtype(), segs.build()),
                  null,
                  copy));
        } else {
          ResolvedCopy r = ResolvedCopy.of(copy, st.geo, runs(st.geo.rank));
          st.exactCount = Math.addExact(st.exactCount, r.count);
          st.exactBytes = Math.addExact(st.exactBytes, r.bytes);
          st.exact.add(r);
          if (r.count > max) {
            st.bound = true;
          }
          list(st);
        }
      } catch (UnsupportedReshardException e) {
        if (shard == null || !replayOnly(st, copy, e)) {
          fallback.put(name, e.reason());
        }
      }
    }

    /**
     * Shard mode: a copy that is no box of its source but still a strided view of it (e.g. a
     * dim-merging reshape, or a copy that materializes) cannot be cut per shard; it is replayed out
     * of a whole-source pull.
     */
    private boolean replayOnly(SourceState st, RecordedCopy copy, UnsupportedReshardException why) {
      StridedView v;
      try {
        v = StridedView.replay(st.geo.info.globalShape(), copy.opChain(), copy.srcName());
      } catch (UnsupportedReshardException notAView) {
        return false;
      }
      if (!v.isRootView() || !Arrays.equals(v.shape(), copy.destShape().dims())) {
        return false;
      }
      if (st.replayOnly.isEmpty()) {
        st.replayOnlyReason =
            "copy into '" + copy.paramName() + "' cannot be cut per shard: " + why.reason();
      }
      st.replayOnly.add(copy);
      list(st);
      return true;
    }

    /** Staged mode, forced source: the copy must replay as a strided view of the staging buffer. */
    private void replayLocally(SourceState st, RecordedCopy copy) {
      SourceInfo info = st.geo.info;
      StridedView v = StridedView.replay(info.globalShape(), copy.opChain(), copy.srcName());
      if (!v.isRootView()) {
        throw new UnsupportedReshardException(
            copy.srcName(),
            "op-chain "
                + copy.opChain()
                + " includes a copy ("
                + v.materializedBy()
                + ") that cannot be replayed as a strided view of the staged source");
      }
      if (!Arrays.equals(v.shape(), copy.destShape().dims())) {
        throw new UnsupportedReshardException(
            copy.srcName(),
            "op-chain "
                + copy.opChain()
                + " yields shape "
                + Arrays.toString(v.shape())
                + " but the destination in '"
                + copy.paramName()
                + "' has shape "
                + copy.destShape());
      }
      if (v.isPureView()) {
        // The exact baseline this copy would have cost, so savings and extra wire bytes stay
        // meaningful.
        try {
          RecordedCopy c = info.dtype() == copy.destDtype() ? copy : stagingCopy(copy, info);
          ResolvedCopy r = ResolvedCopy.of(c, st.geo, runs(st.geo.rank));
          st.exactCount = Math.addExact(st.exactCount, r.count);
          st.exactBytes = Math.addExact(st.exactBytes, r.bytes);
        } catch (UnsupportedReshardException notABox) {
          // replayable, but no box: no exact baseline exists for it
        }
      }
      st.replayed.add(copy);
      list(st);
    }

    private void list(SourceState st) {
      if (!st.listed) {
        st.listed = true;
        order.add(st);
      }
    }

    private static RecordedCopy stagingCopy(RecordedCopy copy, SourceInfo info) {
      return new RecordedCopy(
          copy.srcName(),
          copy.opChain(),
          copy.paramName(),
          0,
          copy.destShape(),
          copy.destShape().rowMajorStrides(),
          info.dtype());
    }

    private ContiguousRuns runs(int rank) {
      if (rank >= runsByRank.length) {
        runsByRank = Arrays.copyOf(runsByRank, rank + 1);
      }
      ContiguousRuns r = runsByRank[rank];
      if (r == null) {
        r = new ContiguousRuns(rank);
        runsByRank[rank] = r;
      }
      return r;
    }

    private TransferPlan assemble() {
      List<BoundingDecision> decisions = new ArrayList<>();
      if (shard != null) {
        for (SourceState st : order) {
          if (fallback.containsKey(st.geo.name)) {
            continue;
          }
          st.choice =
              ShardBounding.decide(
                  st.geo,
                  st.exact,
                  st.converted,
                  st.convertCount,
                  st.convertBytes,
                  st.replayOnly,
                  st.replayOnlyReason,
                  shard,
                  runs(st.geo.rank));
          if (st.choice.fallbackReason() != null) {
            fallback.put(st.geo.name, st.choice.fallbackReason());
          } else {
            decisions.add(st.choice.decision());
          }
        }
      }
      long planned = 0;
      for (SourceState st : order) {
        if (fallback.containsKey(st.geo.name)) {
          continue;
        }
        boolean exactChosen =
            st.choice == null
                ? !st.bound
                : st.choice.decision().chosen() == BoundingDecision.Option.EXACT;
        if (exactChosen) {
          for (ResolvedCopy r : st.exact) {
            planned = Math.addExact(planned, r.count);
          }
        }
      }
      requireDescriptors(planned, "exact");
      SegmentList.Builder segments =
          new SegmentList.Builder((int) Math.min(planned, Integer.MAX_VALUE - 8));
      List<FullPullSource> fullPulls = new ArrayList<>();
      List<StagedShard> staged = new ArrayList<>();
      List<String> unbounded = new ArrayList<>();
      for (SourceState st : order) {
        SourceGeometry geo = st.geo;
        if (fallback.containsKey(geo.name)) {
          continue;
        }
        SourceInfo info = geo.info;
        if (st.choice != null) {
          switch (st.choice.decision().chosen()) {
            case SHARD_STAGING -> {
              staged.addAll(st.choice.staged());
              continue;
            }
            case FULL_PULL -> {
              List<RecordedCopy> copies = new ArrayList<>(st.exact.size() + st.replayOnly.size());
              for (ResolvedCopy r : st.exact) {
                copies.add(r.copy);
              }
              for (ResolvedCopy r : st.converted) {
                copies.add(r.copy);
              }
              copies.addAll(st.replayOnly);
              fullPulls.add(
                  new FullPullSource(
                      geo.name,
                      info.globalShape(),
                      info.dtype(),
                      info.elsize(),
                      st.choice.fullSegments(),
                      sortedLike(copies)));
              continue;
            }
            case EXACT -> {}
          }
        } else if (!st.replayed.isEmpty()) {
          List<PullSegment> segs;
          try {
            segs = identityPull(geo);
          } catch (UnsupportedReshardException e) {
            throw new UnsupportedReshardException(
                geo.name, STAGED_UNRECOVERABLE + ": " + e.reason());
          }
          fullPulls.add(
              new FullPullSource(
                  geo.name, info.globalShape(), info.dtype(), info.elsize(), segs, st.replayed));
          continue;
        }
        if (st.bound && st.choice == null) {
          try {
            List<PullSegment> segs = dim0Partition(geo);
            List<RecordedCopy> copies = new ArrayList<>(st.exact.size());
            for (ResolvedCopy r : st.exact) {
              copies.add(r.copy);
            }
            fullPulls.add(
                new FullPullSource(
                    geo.name, info.globalShape(), info.dtype(), info.elsize(), segs, copies));
            continue;
          } catch (UnsupportedReshardException notAPartition) {
            unbounded.add(geo.name);
          }
        }
        ContiguousRuns runs = runs(geo.rank);
        for (ResolvedCopy r : st.exact) {
          r.emit(geo, runs, segments);
        }
      }
      long exactCount = 0;
      long exactBytes = 0;
      for (SourceState st : states.values()) {
        if (!fallback.containsKey(st.geo.name)) {
          exactCount = Math.addExact(exactCount, st.exactCount);
          exactBytes = Math.addExact(exactBytes, st.exactBytes);
        }
      }
      List<ConvertSource> convertList = new ArrayList<>(converts.size());
      long deferredCount = 0;
      for (PlannedConvert c : converts) {
        if (fallback.containsKey(c.source)) {
          continue;
        }
        if (c.convert != null) {
          convertList.add(c.convert);
          continue;
        }
        SourceState st = states.get(c.source);
        if (st.choice.decision().chosen() != BoundingDecision.Option.EXACT) {
          continue; // replayed (and cast) out of the staged shards or the full pull
        }
        deferredCount = Math.addExact(deferredCount, c.deferred.count);
        requireDescriptors(deferredCount, "convert");
        SegmentList.Builder segs =
            new SegmentList.Builder((int) Math.min(c.deferred.count, 1 << 16));
        c.deferred.emit(st.geo, runs(st.geo.rank), segs);
        convertList.add(
            new ConvertSource(
                c.copy.paramName(), c.copy.destShape(), st.geo.info.dtype(), segs.build()));
      }
      if (shard == null) {
        return new TransferPlan(
            segments.build(),
            List.copyOf(fallback.keySet()),
            convertList,
            fullPulls,
            unbounded,
            exactCount,
            exactBytes,
            fallback);
      }
      return new TransferPlan(
          segments.build(),
          List.copyOf(fallback.keySet()),
          convertList,
          fullPulls,
          unbounded,
          exactCount,
          exactBytes,
          fallback,
          staged,
          BoundingMode.SHARD,
          decisions);
    }

    /** The source's copies in capture order (exact and replay-only copies interleave there). */
    private List<RecordedCopy> sortedLike(List<RecordedCopy> copies) {
      if (copies.size() < 2) {
        return copies;
      }
      Set<RecordedCopy> wanted =
          java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
      wanted.addAll(copies);
      List<RecordedCopy> out = new ArrayList<>(copies.size());
      for (RecordedCopy c : capture.copies()) {
        if (wanted.contains(c)) {
          out.add(c);
        }
      }
      return out;
    }
  }
}
