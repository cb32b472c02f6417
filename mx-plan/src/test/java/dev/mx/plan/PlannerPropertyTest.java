package dev.mx.plan;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.metadata.PublishedShard;
import dev.mx.api.metadata.PublishedTensor;
import dev.mx.api.metadata.ShardTable;
import dev.mx.api.plan.CaptureResult;
import dev.mx.api.plan.OpSpec;
import dev.mx.api.plan.RecordedCopy;
import dev.mx.api.plan.Shard;
import dev.mx.api.plan.SourceInfo;
import dev.mx.api.plan.TransferPlan;
import dev.mx.api.util.Settings;
import dev.mx.plan.merge.ReplicaMerge;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.opentest4j.AssertionFailedError;

/**
 * Random plans executed for real: random global tensors (rank 1–4, several dtypes), uneven grid
 * shardings over 1–8 publishers with duplicate replicas (raw or replica-merged), random receiver
 * views (narrow, slices, chunk, unbind, permutations) written into fused parameters at offsets with
 * permuted strides, converts, a few unplannable copies, and random thresholds. Each plan — normal
 * and strict staged — runs through the {@code mem} transport into native buffers, full pulls are
 * replayed with the view algebra, and every element is compared with a naive gather from the global
 * tensor. A failure names the case seed.
 */
class PlannerPropertyTest {
  private static final long SEED = 0x6d78_706c_616eL; // "mxplan"
  private static final int CASES = 2000;

  /** Runs just one case: {@code -Dmx.test.planCaseSeed=<seed printed by a failure>}. */
  private static final String CASE_SEED_PROPERTY = "mx.test.planCaseSeed";

  static final DType[] TYPES = {DType.U8, DType.I16, DType.I32, DType.I64, DType.F32, DType.F64};
  static final DType[] CONVERT_TARGETS = {DType.I32, DType.I64, DType.F32, DType.F64};
  private static final int[] THRESHOLDS = {1, 2, 3, 4, 8, 64, Integer.MAX_VALUE};

  /** One generated copy with what the test knows independently of the planner. */
  record Case(RecordedCopy copy, int[] perm, long[] lo, long[] hi, boolean plannable) {}

  private final ReshardPlanner planner = new ReshardPlanner(Settings.of(Map.of(), Map.of()));
  private final Map<String, Integer> tally = new HashMap<>();

  @Test
  void randomPlansReconstructEveryElement() {
    String only = System.getProperty(CASE_SEED_PROPERTY);
    SplittableRandom master = new SplittableRandom(SEED);
    for (int c = 0; c < CASES; c++) {
      long caseSeed = only != null ? Long.parseLong(only) : master.nextLong();
      try {
        runCase(caseSeed);
      } catch (Throwable t) {
        throw new AssertionFailedError(
            "planner property case seed "
                + caseSeed
                + " (master seed "
                + SEED
                + ", case "
                + c
                + "; rerun alone with -D"
                + CASE_SEED_PROPERTY
                + "="
                + caseSeed
                + "): "
                + t,
            t);
      }
      if (only != null) {
        return;
      }
    }
    System.out.println("planner property cases: " + new java.util.TreeMap<>(tally));
    // The generator must reach every planner path, or passing proves little.
    for (String path :
        List.of(
            "full_pull",
            "unbounded",
            "convert",
            "fallback",
            "merged",
            "staged_full_pull",
            "exact_segments")) {
      assertTrue(
          tally.getOrDefault(path, 0) > 20,
          "path " + path + " reached only " + tally.get(path) + " times");
    }
  }

  private void count(String path, boolean reached) {
    if (reached) {
      tally.merge(path, 1, Integer::sum);
    }
  }

  private void runCase(long caseSeed) {
    SplittableRandom r = new SplittableRandom(caseSeed);
    try (MemExecution x = new MemExecution()) {
      Map<String, GlobalTensor> tensors = new LinkedHashMap<>();
      Map<String, SourceInfo> raw = randomSources(x, tensors, r);
      int nSources = tensors.size();
      boolean merged = r.nextBoolean();
      Map<String, SourceInfo> sources = merged ? merge(raw) : raw;
      count("merged", merged);

      // Receiver copies, grouped into fused parameters.
      List<Case> cases = new ArrayList<>();
      Map<String, Long> paramSize = new LinkedHashMap<>();
      Map<String, DType> paramType = new HashMap<>();
      int nCopies = 1 + r.nextInt(5);
      for (int i = 0; i < nCopies; i++) {
        String src = "src" + r.nextInt(nSources);
        Case k = randomCopy(tensors.get(src), i, paramSize, paramType, r);
        cases.add(k);
      }
      Set<String> failing = new HashSet<>();
      for (Case k : cases) {
        if (!k.plannable) {
          failing.add(k.copy.srcName());
        }
      }
      CaptureResult capture = CaptureResult.of(cases.stream().map(Case::copy).toList());
      int threshold = THRESHOLDS[r.nextInt(THRESHOLDS.length)];

      TransferPlan plan = planner.plan(capture, sources, threshold);
      assertEquals(List.copyOf(orderedFailing(cases, failing)), plan.fallback(), "fallback");
      assertEquals(expectedExactBytes(cases, failing, sources), plan.exactBytes(), "exact bytes");
      if (threshold == Integer.MAX_VALUE) {
        assertEquals(List.of(), plan.fullPulls(), "nothing is bounded at an unreachable threshold");
      }
      count("full_pull", !plan.fullPulls().isEmpty());
      count("unbounded", !plan.unboundedSources().isEmpty());
      count("convert", !plan.converts().isEmpty());
      count("fallback", !plan.fallback().isEmpty());
      count("exact_segments", !plan.segments().isEmpty());
      paramSize.forEach((p, n) -> x.param(p, n, paramType.get(p)));
      x.execute(plan);
      verify(x, cases, failing, tensors, paramSize, "plan");

      if (r.nextInt(3) == 0) {
        try (MemExecution y = new MemExecution()) {
          Map<String, SourceInfo> again = new LinkedHashMap<>();
          for (var e : tensors.entrySet()) {
            again.put(e.getKey(), republish(y, e.getValue(), sources.get(e.getKey())));
          }
          TransferPlan staged = planner.planStaged(capture, again);
          count("staged_full_pull", !staged.fullPulls().isEmpty());
          paramSize.forEach((p, n) -> y.param(p, n, paramType.get(p)));
          y.execute(staged);
          verify(y, cases, failing, tensors, paramSize, "staged plan");
        }
      }
    }
  }

  /**
   * 1–3 random global tensors {@code src0..}, each published as {@link #publishSharded} by 1–8
   * publishers.
   */
  static Map<String, SourceInfo> randomSources(
      MemExecution x, Map<String, GlobalTensor> tensors, SplittableRandom r) {
    int publishers = 1 + r.nextInt(8);
    int nSources = 1 + r.nextInt(3);
    Map<String, SourceInfo> raw = new LinkedHashMap<>();
    for (int s = 0; s < nSources; s++) {
      String name = "src" + s;
      int rank = 1 + r.nextInt(4);
      long[] g = new long[rank];
      for (int d = 0; d < rank; d++) {
        g[d] = 1 + r.nextInt(rank <= 2 ? 9 : 5);
      }
      GlobalTensor t =
          new GlobalTensor(name, Shape.of(g), TYPES[r.nextInt(TYPES.length)], r.nextLong());
      tensors.put(name, t);
      raw.put(name, publishSharded(x, t, publishers, r));
    }
    return raw;
  }

  /**
   * Copy {@code i} of {@code t}: one in eight a convert into its own parameter, else appended to a
   * fused parameter of the source's dtype; records the parameter's size and dtype.
   */
  static Case randomCopy(
      GlobalTensor t,
      int i,
      Map<String, Long> paramSize,
      Map<String, DType> paramType,
      SplittableRandom r) {
    boolean convert = r.nextInt(8) == 0;
    String param;
    long destOffset;
    DType destType;
    if (convert) {
      // converts land whole in their own parameter (the convert path casts the whole staging
      // buffer)
      param = "conv" + i;
      destOffset = 0;
      DType to = CONVERT_TARGETS[r.nextInt(CONVERT_TARGETS.length)];
      destType = to == t.dtype() ? DType.F64 == to ? DType.I64 : DType.F64 : to;
    } else {
      // fused parameters hold copies of one dtype at successive offsets
      param = "fused_" + t.dtype() + "_" + r.nextInt(2);
      destOffset = paramSize.getOrDefault(param, 0L);
      destType = t.dtype();
    }
    Case k = generateCopy(t, param, destOffset, destType, convert, r);
    paramSize.merge(param, k.copy.destShape().numel(), Long::sum);
    paramType.put(param, destType);
    return k;
  }

  /** An uneven grid over 1–3 dims, each box published by a random publisher, some boxes twice. */
  static SourceInfo publishSharded(
      MemExecution x, GlobalTensor t, int publishers, SplittableRandom r) {
    long[] g = t.shape().dims();
    List<long[]> cuts = new ArrayList<>();
    for (long extent : g) {
      List<Long> c = new ArrayList<>(List.of(0L));
      int pieces = r.nextInt(3) == 0 ? 1 + r.nextInt(3) : 1;
      for (int p = 1; p < pieces; p++) {
        c.add(1 + r.nextLong(Math.max(1, extent - 1)));
      }
      c.add(extent);
      cuts.add(c.stream().distinct().sorted().mapToLong(Long::longValue).toArray());
    }
    List<String> sessions = new ArrayList<>();
    List<long[][]> boxes = new ArrayList<>();
    int[] idx = new int[g.length];
    while (true) {
      long[] off = new long[g.length];
      long[] shp = new long[g.length];
      for (int d = 0; d < g.length; d++) {
        off[d] = cuts.get(d)[idx[d]];
        shp[d] = cuts.get(d)[idx[d] + 1] - off[d];
      }
      int copies = r.nextInt(4) == 0 ? 2 : 1;
      for (int k = 0; k < copies; k++) {
        sessions.add("pub" + r.nextInt(publishers));
        boxes.add(new long[][] {off, shp});
      }
      int d = g.length - 1;
      while (d >= 0 && ++idx[d] == cuts.get(d).length - 1) {
        idx[d] = 0;
        d--;
      }
      if (d < 0) {
        break;
      }
    }
    // publishers announce their shards in no particular order
    for (int i = boxes.size() - 1; i > 0; i--) {
      int j = r.nextInt(i + 1);
      java.util.Collections.swap(boxes, i, j);
      java.util.Collections.swap(sessions, i, j);
    }
    return x.source(t, sessions, boxes);
  }

  /** The same shards, published again into another execution's memory. */
  static SourceInfo republish(MemExecution y, GlobalTensor t, SourceInfo info) {
    List<String> sessions = new ArrayList<>();
    List<long[][]> boxes = new ArrayList<>();
    for (Shard s : info.shards()) {
      sessions.add(s.session());
      boxes.add(new long[][] {s.shardOffset(), s.shape().dims()});
    }
    return y.source(t, sessions, boxes);
  }

  static Map<String, SourceInfo> merge(Map<String, SourceInfo> raw) {
    Map<String, List<PublishedTensor>> bySession = new LinkedHashMap<>();
    for (var e : raw.entrySet()) {
      SourceInfo info = e.getValue();
      Map<String, List<PublishedShard>> shards = new LinkedHashMap<>();
      for (Shard s : info.shards()) {
        shards
            .computeIfAbsent(s.session(), k -> new ArrayList<>())
            .add(new PublishedShard(s.session(), 0, s.addr(), s.shardOffset(), s.shape(), null));
      }
      shards.forEach(
          (session, list) ->
              bySession
                  .computeIfAbsent(session, k -> new ArrayList<>())
                  .add(
                      new PublishedTensor(
                          e.getKey(),
                          info.dtype().torchLabel(),
                          info.elsize(),
                          info.globalShape(),
                          list)));
    }
    List<ShardTable> tables = new ArrayList<>();
    bySession.forEach((session, list) -> tables.add(new ShardTable(session, "", null, list, null)));
    return ReplicaMerge.merge(tables).sources();
  }

  /** A view of a random permuted box of {@code t}, built from a random mix of view ops. */
  static Case generateCopy(
      GlobalTensor t,
      String param,
      long destOffset,
      DType destType,
      boolean convert,
      SplittableRandom r) {
    long[] g = t.shape().dims();
    int n = g.length;
    long[] lo = new long[n];
    long[] hi = new long[n];
    List<OpSpec> chain = new ArrayList<>();
    boolean tupleKey = n >= 2 && r.nextInt(5) == 0;
    List<Object> items = new ArrayList<>();
    for (int d = 0; d < n; d++) {
      int how = r.nextInt(4);
      if (how == 0 || tupleKey) {
        lo[d] = r.nextLong(g[d]);
        hi[d] = lo[d] + 1 + r.nextLong(g[d] - lo[d]);
        if (tupleKey) {
          items.add(Arrays.asList(lo[d] == 0 ? null : lo[d], hi[d] == g[d] ? null : hi[d]));
        } else {
          chain.add(OpSpec.narrow(d, lo[d], hi[d] - lo[d]));
        }
      } else if (how == 1) {
        long chunks = 1 + r.nextLong(g[d]);
        long split = (g[d] + chunks - 1) / chunks;
        long count = (g[d] + split - 1) / split;
        long i = r.nextLong(count);
        lo[d] = i * split;
        hi[d] = Math.min(g[d], lo[d] + split);
        chain.add(OpSpec.of("chunk", chunks, (long) d));
        chain.add(OpSpec.of("__getitem__", i));
      } else if (how == 2 && d == n - 1) {
        lo[d] = r.nextLong(g[d]);
        hi[d] = lo[d] + 1 + r.nextLong(g[d] - lo[d]);
        chain.add(OpSpec.of("getitem", "...", Arrays.asList(lo[d], hi[d])));
      } else {
        lo[d] = 0;
        hi[d] = g[d];
      }
    }
    if (tupleKey) {
      chain.add(OpSpec.of("getitem", items));
    }
    if (r.nextInt(4) == 0) {
      chain.add(0, OpSpec.of("unsqueeze", 0L));
      chain.add(1, OpSpec.of("unbind", 0L));
      chain.add(2, OpSpec.of("getitem", 0L));
    }
    int[] perm = shuffled(n, r);
    boolean identity = isIdentity(perm);
    if (!identity) {
      if (n == 2 && r.nextBoolean()) {
        chain.add(r.nextBoolean() ? OpSpec.of("t") : OpSpec.of("transpose", 0L, 1L));
      } else {
        List<Object> dims = new ArrayList<>();
        for (int p : perm) {
          dims.add((long) p);
        }
        chain.add(new OpSpec("permute", dims, null));
      }
    }
    if (r.nextInt(6) == 0) {
      long k = r.nextInt(n + 1);
      chain.add(OpSpec.of("unsqueeze", k));
      chain.add(OpSpec.of("squeeze", k));
    }
    long[] viewShape = new long[n];
    for (int d = 0; d < n; d++) {
      viewShape[d] = hi[perm[d]] - lo[perm[d]];
    }
    boolean plannable = true;
    if (!convert && r.nextInt(25) == 0) {
      // a copy the planner must refuse (and strict staged planning cannot replay): an op outside
      // the allow-list
      chain.add(OpSpec.of("index_select", 0L, 0L));
      plannable = false;
    }
    long[] destStride =
        convert
            ? Shape.of(viewShape).rowMajorStrides()
            : permutedStrides(viewShape, shuffled(n, r));
    RecordedCopy copy =
        new RecordedCopy(
            t.name(), chain, param, destOffset, Shape.of(viewShape), destStride, destType);
    return new Case(copy, perm, lo, hi, plannable);
  }

  private static int[] shuffled(int n, SplittableRandom r) {
    int[] p = new int[n];
    for (int i = 0; i < n; i++) {
      p[i] = i;
    }
    for (int i = n - 1; i > 0; i--) {
      int j = r.nextInt(i + 1);
      int tmp = p[i];
      p[i] = p[j];
      p[j] = tmp;
    }
    return p;
  }

  private static boolean isIdentity(int[] p) {
    for (int i = 0; i < p.length; i++) {
      if (p[i] != i) {
        return false;
      }
    }
    return true;
  }

  /**
   * Strides that lay the view out contiguously with dims ordered by {@code order} (outermost
   * first).
   */
  private static long[] permutedStrides(long[] shape, int[] order) {
    long[] strides = new long[shape.length];
    long acc = 1;
    for (int k = order.length - 1; k >= 0; k--) {
      strides[order[k]] = acc;
      acc *= shape[order[k]];
    }
    return strides;
  }

  static List<String> orderedFailing(List<Case> cases, Set<String> failing) {
    List<String> out = new ArrayList<>();
    for (Case k : cases) {
      if (!k.plannable && !out.contains(k.copy.srcName())) {
        out.add(k.copy.srcName());
      }
    }
    assertEquals(failing.size(), out.size());
    return out;
  }

  /**
   * Σ over plannable copies and shards of |needed box ∩ shard| · elsize, computed from the
   * generator's boxes.
   */
  static long expectedExactBytes(
      List<Case> cases, Set<String> failing, Map<String, SourceInfo> sources) {
    long total = 0;
    for (Case k : cases) {
      if (failing.contains(k.copy.srcName())) {
        continue;
      }
      SourceInfo info = sources.get(k.copy.srcName());
      for (Shard s : info.shards()) {
        long v = 1;
        for (int d = 0; d < k.lo.length; d++) {
          long a = Math.max(k.lo[d], s.shardOffset(d));
          long b = Math.min(k.hi[d], s.shardOffset(d) + s.shape().dim(d));
          v *= Math.max(0, b - a);
        }
        total += v * info.elsize();
      }
    }
    return total;
  }

  /**
   * Every element of every parameter equals the naive gather (or the fill where nothing writes).
   */
  static void verify(
      MemExecution x,
      List<Case> cases,
      Set<String> failing,
      Map<String, GlobalTensor> tensors,
      Map<String, Long> paramSize,
      String what) {
    Map<String, long[]> expected = new HashMap<>();
    paramSize.forEach((p, n) -> expected.put(p, new long[n.intValue()]));
    for (Case k : cases) {
      if (failing.contains(k.copy.srcName())) {
        continue;
      }
      GlobalTensor t = tensors.get(k.copy.srcName());
      long[] gs = t.shape().rowMajorStrides();
      long[] shape = k.copy.destShape().dims();
      long[] ds = k.copy.destStride();
      long[] out = expected.get(k.copy.paramName());
      long[] v = new long[shape.length];
      for (long e = 0; e < k.copy.destShape().numel(); e++) {
        long flat = 0;
        long dst = k.copy.destOffset();
        for (int d = 0; d < shape.length; d++) {
          flat += (k.lo[k.perm[d]] + v[d]) * gs[k.perm[d]];
          dst += v[d] * ds[d];
        }
        out[(int) dst] = t.value(flat);
        for (int d = shape.length - 1; d >= 0; d--) {
          if (++v[d] < shape[d]) {
            break;
          }
          v[d] = 0;
        }
      }
    }
    for (var e : expected.entrySet()) {
      long[] want = e.getValue();
      for (int i = 0; i < want.length; i++) {
        long got = x.get(e.getKey(), i);
        if (got != want[i]) {
          throw new AssertionFailedError(
              what
                  + ": parameter '"
                  + e.getKey()
                  + "' element "
                  + i
                  + " is "
                  + got
                  + ", the naive gather says "
                  + want[i]);
        }
      }
    }
  }
}
