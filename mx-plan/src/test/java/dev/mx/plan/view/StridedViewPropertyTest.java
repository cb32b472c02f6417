package dev.mx.plan.view;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.mx.api.Shape;
import dev.mx.api.error.UnsupportedReshardException;
import dev.mx.api.plan.OpSpec;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

/**
 * Random op chains replayed by {@link StridedView} against a naive model that carries, for every
 * element of the result, the flat root index it came from (no strides anywhere). Wherever the view
 * claims a root mapping, every element must agree.
 */
class StridedViewPropertyTest {
  private static final long SEED = 0x5eed_0001L;
  private static final int CASES = 4000;

  /** The naive model: a shape and the root flat index of each element in row-major order. */
  private record Naive(long[] shape, long[] data) {

    static Naive root(long[] shape) {
      long n = numel(shape);
      long[] d = new long[(int) n];
      for (int i = 0; i < n; i++) {
        d[i] = i;
      }
      return new Naive(shape.clone(), d);
    }

    /** out[idx] = this[map(idx)]. */
    Naive gather(long[] outShape, UnaryOperator<long[]> map) {
      long[] out = new long[(int) numel(outShape)];
      long[] idx = new long[outShape.length];
      for (int i = 0; i < out.length; i++) {
        out[i] = data[(int) flat(shape, map.apply(idx.clone()))];
        increment(idx, outShape);
      }
      return new Naive(outShape, out);
    }

    Naive relabel(long[] newShape) {
      return new Naive(newShape, data);
    }
  }

  static long numel(long[] shape) {
    long n = 1;
    for (long s : shape) {
      n *= s;
    }
    return n;
  }

  static long flat(long[] shape, long[] idx) {
    long f = 0;
    for (int d = 0; d < shape.length; d++) {
      f = f * shape[d] + idx[d];
    }
    return f;
  }

  static void increment(long[] idx, long[] shape) {
    for (int d = shape.length - 1; d >= 0; d--) {
      if (++idx[d] < shape[d]) {
        return;
      }
      idx[d] = 0;
    }
  }

  static long[] insert(long[] a, int d, long v) {
    long[] r = new long[a.length + 1];
    System.arraycopy(a, 0, r, 0, d);
    r[d] = v;
    System.arraycopy(a, d, r, d + 1, a.length - d);
    return r;
  }

  static long[] remove(long[] a, int d) {
    long[] r = new long[a.length - 1];
    System.arraycopy(a, 0, r, 0, d);
    System.arraycopy(a, d + 1, r, d, a.length - d - 1);
    return r;
  }

  /** A generated op with its naive effect. */
  private record Step(List<OpSpec> ops, Naive result) {}

  private static Step slice(Naive t, int d, long start, long len, long step, List<OpSpec> ops) {
    long[] outShape = t.shape.clone();
    outShape[d] = len;
    return new Step(
        ops,
        t.gather(
            outShape,
            idx -> {
              idx[d] = start + idx[d] * step;
              return idx;
            }));
  }

  private static Step select(Naive t, int d, long i, List<OpSpec> ops) {
    return new Step(ops, t.gather(remove(t.shape, d), idx -> insert(idx, d, i)));
  }

  private static Step permute(Naive t, int[] perm, List<OpSpec> ops) {
    long[] outShape = new long[perm.length];
    for (int k = 0; k < perm.length; k++) {
      outShape[k] = t.shape[perm[k]];
    }
    return new Step(
        ops,
        t.gather(
            outShape,
            idx -> {
              long[] in = new long[perm.length];
              for (int k = 0; k < perm.length; k++) {
                in[perm[k]] = idx[k];
              }
              return in;
            }));
  }

  private static Step randomStep(Naive t, SplittableRandom r) {
    int rank = t.shape.length;
    int kind = r.nextInt(12);
    if (rank == 0 && kind < 9) {
      kind = 9 + r.nextInt(3);
    }
    switch (kind) {
      case 0 -> {
        int d = r.nextInt(rank);
        long s = t.shape[d];
        long start = r.nextLong(s + 1);
        long len = r.nextLong(s - start + 1);
        return slice(t, d, start, len, 1, List.of(OpSpec.narrow(d, start, len)));
      }
      case 1 -> {
        long s = t.shape[0];
        long step = 1 + r.nextInt(3);
        long start = r.nextLong(s + 1);
        long stop = start + r.nextLong(s - start + 1);
        long len = stop > start ? (stop - start + step - 1) / step : 0;
        OpSpec op =
            r.nextBoolean() || start == s
                ? OpSpec.of("getitem", Arrays.asList(start, stop, step))
                : OpSpec.of(
                    "getitem",
                    Arrays.asList(start - s, stop, step)); // negative start counts from the end
        return slice(t, 0, start, len, step, List.of(op));
      }
      case 2 -> {
        int d = rank - 1;
        if (t.shape[d] == 0) {
          return new Step(List.of(OpSpec.of("getitem", "...")), t);
        }
        long i = r.nextLong(t.shape[d]);
        return select(t, d, i, List.of(OpSpec.of("getitem", "...", i)));
      }
      case 3 -> {
        int[] perm = new int[rank];
        for (int k = 0; k < rank; k++) {
          perm[k] = k;
        }
        for (int k = rank - 1; k > 0; k--) {
          int j = r.nextInt(k + 1);
          int x = perm[k];
          perm[k] = perm[j];
          perm[j] = x;
        }
        List<Object> args = new ArrayList<>();
        for (int p : perm) {
          args.add((long) p);
        }
        return permute(t, perm, List.of(new OpSpec("permute", args, null)));
      }
      case 4 -> {
        int d0 = r.nextInt(rank);
        int d1 = r.nextInt(rank);
        int[] perm = new int[rank];
        for (int k = 0; k < rank; k++) {
          perm[k] = k;
        }
        perm[d0] = d1;
        perm[d1] = d0;
        OpSpec op =
            rank == 2 && r.nextBoolean() && d0 != d1
                ? OpSpec.of("t")
                : OpSpec.of("transpose", (long) d0, (long) d1);
        return permute(t, perm, List.of(op));
      }
      case 5 -> {
        int d = r.nextInt(rank);
        if (t.shape[d] == 0) {
          return new Step(List.of(OpSpec.of("contiguous")), t);
        }
        long i = r.nextLong(t.shape[d]);
        return select(t, d, i, List.of(OpSpec.of("unbind", (long) d), OpSpec.of("__getitem__", i)));
      }
      case 6 -> {
        int d = r.nextInt(rank);
        long s = t.shape[d];
        long chunks = 1 + r.nextInt(4);
        long split = (s + chunks - 1) / chunks;
        if (split == 0) {
          return new Step(
              List.of(OpSpec.of("chunk", chunks, (long) d), OpSpec.of("getitem", 0L)), t);
        }
        long count = Math.max(1, (s + split - 1) / split);
        long i = r.nextLong(count);
        long start = i * split;
        long len = Math.min(split, s - start);
        return slice(
            t,
            d,
            start,
            len,
            1,
            List.of(OpSpec.of("chunk", chunks, (long) d), OpSpec.of("getitem", i)));
      }
      case 7 -> {
        // flatten(start, end)
        int s = r.nextInt(rank);
        int e = s + r.nextInt(rank - s);
        long[] shape = new long[rank - (e - s)];
        System.arraycopy(t.shape, 0, shape, 0, s);
        long m = 1;
        for (int d = s; d <= e; d++) {
          m *= t.shape[d];
        }
        shape[s] = m;
        System.arraycopy(t.shape, e + 1, shape, s + 1, rank - e - 1);
        return new Step(List.of(OpSpec.of("flatten", (long) s, (long) e)), t.relabel(shape));
      }
      case 8 -> {
        // view/reshape splitting one dim into two factors, or merging two adjacent dims
        String name = r.nextBoolean() ? "view" : "reshape";
        int d = r.nextInt(rank);
        long s = t.shape[d];
        long[] shape;
        if (r.nextInt(3) == 0) {
          return new Step(List.of(OpSpec.of(name, -1L)), t.relabel(new long[] {numel(t.shape)}));
        }
        if (rank >= 2 && d < rank - 1 && r.nextBoolean()) {
          shape = remove(t.shape, d + 1);
          shape[d] = s * t.shape[d + 1];
        } else {
          long f = 1;
          for (long c = 2; c <= s; c++) {
            if (s % c == 0 && r.nextBoolean()) {
              f = c;
              break;
            }
          }
          shape = insert(t.shape, d, f);
          shape[d + 1] = f == 0 ? 0 : s / f;
        }
        List<Object> args = new ArrayList<>();
        int infer = r.nextInt(shape.length + 1);
        for (int k = 0; k < shape.length; k++) {
          args.add(k == infer && numel(shape) > 0 ? -1L : shape[k]);
        }
        return new Step(List.of(new OpSpec(name, args, null)), t.relabel(shape));
      }
      case 9 -> {
        int d = r.nextInt(rank + 1);
        long[] shape = insert(t.shape, d, 1);
        return new Step(List.of(OpSpec.of("unsqueeze", (long) d)), t.relabel(shape));
      }
      case 10 -> {
        long[] shape = Arrays.stream(t.shape).filter(x -> x != 1).toArray();
        return new Step(List.of(OpSpec.of("squeeze")), t.relabel(shape));
      }
      default -> {
        return new Step(List.of(OpSpec.of("contiguous")), t);
      }
    }
  }

  @Test
  void randomChainsAgreeWithANaiveGather() {
    SplittableRandom rnd = new SplittableRandom(SEED);
    int rootViews = 0;
    int copies = 0;
    int impossibleViews = 0;
    int lostMappings = 0;
    for (int c = 0; c < CASES; c++) {
      long caseSeed = rnd.nextLong();
      SplittableRandom r = new SplittableRandom(caseSeed);
      int rank = 1 + r.nextInt(4);
      long[] g = new long[rank];
      for (int d = 0; d < rank; d++) {
        g[d] = r.nextInt(10) == 0 ? 0 : 1 + r.nextInt(5);
      }
      Naive t = Naive.root(g);
      List<OpSpec> chain = new ArrayList<>();
      int length = r.nextInt(7);
      for (int i = 0; i < length; i++) {
        Step s = randomStep(t, r);
        chain.addAll(s.ops);
        t = s.result;
      }
      StridedView v;
      try {
        v = StridedView.replay(Shape.of(g), chain);
      } catch (UnsupportedReshardException e) {
        // The naive model cannot tell viewability; only an impossible view may fail here.
        assertTrue(
            e.getMessage().contains("view size is not compatible"),
            "seed " + caseSeed + " chain " + chain + ": " + e.getMessage());
        impossibleViews++;
        continue;
      }
      assertArrayEquals(t.shape, v.shape(), "seed " + caseSeed + " chain " + chain);
      if (v.materialized()) {
        copies++;
      }
      if (!v.isRootView()) {
        assertTrue(v.materialized(), "seed " + caseSeed);
        lostMappings++;
        continue;
      }
      rootViews++;
      long[] idx = new long[t.shape.length];
      long[] strides = v.strides();
      for (int i = 0; i < t.data.length; i++) {
        long at = v.offset();
        for (int d = 0; d < idx.length; d++) {
          at += idx[d] * strides[d];
        }
        if (at != t.data[i]) {
          fail(
              "seed "
                  + caseSeed
                  + " chain "
                  + chain
                  + " "
                  + v
                  + ": element "
                  + Arrays.toString(idx)
                  + " maps to "
                  + at
                  + ", naive gather says "
                  + t.data[i]);
        }
        increment(idx, t.shape);
      }
    }
    // The generator must exercise every outcome, or the test proves little.
    System.out.printf(
        "view chains: %d root views, %d copies (%d without a root mapping), %d impossible views%n",
        rootViews, copies, lostMappings, impossibleViews);
    assertTrue(rootViews > CASES / 2, "root views " + rootViews);
    assertTrue(copies > 50, "copies " + copies);
    assertTrue(impossibleViews > 5, "impossible views " + impossibleViews);
    assertTrue(lostMappings > 5, "copies without a root mapping " + lostMappings);
  }
}
