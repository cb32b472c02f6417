package dev.mx.refit.stage;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.Box;
import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.error.IncompleteRefitException;
import dev.mx.api.plan.CaptureResult;
import dev.mx.api.plan.FullPullSource;
import dev.mx.api.plan.PullSegment;
import dev.mx.api.plan.RecordedCopy;
import dev.mx.api.plan.Shard;
import dev.mx.api.plan.StagedShard;
import dev.mx.api.plan.TransferPlan;
import dev.mx.api.refit.Capture;
import dev.mx.api.refit.ParamSpec;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Property test of the element coverage gate: random plans mixing exact segments, full-pull copies
 * and staged-shard copies (row blocks and strided column blocks), with declared padding, always
 * pass when every element is written once, and are always rejected when one random element is
 * dropped or doubled — naming that parameter. The seed is printed on failure.
 */
class ElementCoveragePropertyTest {
  private static final int EL = 4;

  /** A generated plan; {@code param}/{@code element} say where the mutation (if any) went. */
  record Generated(Capture capture, TransferPlan plan, String param, long element) {}

  enum Mutation {
    NONE,
    DROP,
    DOUBLE
  }

  static Generated generate(Random rnd, Mutation mutation) {
    Map<String, ParamSpec> layout = new LinkedHashMap<>();
    Map<String, List<Box>> padding = new LinkedHashMap<>();
    List<PullSegment> exact = new ArrayList<>();
    List<FullPullSource> full = new ArrayList<>();
    List<StagedShard> staged = new ArrayList<>();
    int params = 1 + rnd.nextInt(4);
    String mutParam = "p" + rnd.nextInt(params);
    String victimParam = null;
    long victim = -1;
    for (int p = 0; p < params; p++) {
      String name = "p" + p;
      int rank = 1 + rnd.nextInt(3);
      long[] dims = new long[rank];
      for (int d = 0; d < rank; d++) {
        dims[d] = 1 + rnd.nextInt(6);
      }
      Shape shape = Shape.of(dims);
      layout.put(name, new ParamSpec(shape, DType.F32));
      long[] strides = shape.rowMajorStrides();
      long numel = shape.numel();
      long e = name.equals(mutParam) && mutation != Mutation.NONE ? rnd.nextLong(numel) : -1;
      if (e >= 0) {
        victimParam = name;
        victim = e;
      }
      // Blocks along dim 0 or the last dim; the last block may be declared padding.
      int axis = rnd.nextBoolean() ? 0 : rank - 1;
      List<long[]> blocks = new ArrayList<>(); // {start, length} along axis
      for (long at = 0; at < dims[axis]; ) {
        long len = 1 + rnd.nextLong(dims[axis] - at);
        blocks.add(new long[] {at, len});
        at += len;
      }
      for (int b = 0; b < blocks.size(); b++) {
        long[] lo = new long[rank];
        long[] size = dims.clone();
        lo[axis] = blocks.get(b)[0];
        size[axis] = blocks.get(b)[1];
        Box box = new Box(lo, add(lo, size));
        boolean holdsVictim =
            e >= 0 && mutation == Mutation.DROP && contains(box, unravel(e, dims));
        if (!holdsVictim && b == blocks.size() - 1 && blocks.size() > 1 && rnd.nextInt(4) == 0) {
          padding.computeIfAbsent(name, k -> new ArrayList<>()).add(box);
          continue;
        }
        long offset = 0;
        for (int d = 0; d < rank; d++) {
          offset += lo[d] * strides[d];
        }
        int kind = holdsVictim ? 0 : rnd.nextInt(3);
        if (kind == 0) {
          // Exact segments, one per contiguous run of the block, skipping a dropped element.
          for (long[] run : runs(box, dims)) {
            if (holdsVictim && e >= run[0] && e < run[0] + run[1]) {
              add(exact, name, run[0], e - run[0]);
              add(exact, name, e + 1, run[0] + run[1] - e - 1);
            } else {
              add(exact, name, run[0], run[1]);
            }
          }
        } else {
          RecordedCopy c =
              new RecordedCopy(
                  "src-" + name + "-" + b,
                  List.of(),
                  name,
                  offset,
                  Shape.of(size),
                  strides,
                  DType.F32);
          long bytes = Shape.of(size).numel() * EL;
          if (kind == 1) {
            full.add(
                new FullPullSource(
                    c.srcName(),
                    Shape.of(size),
                    DType.F32,
                    EL,
                    List.of(new PullSegment("s", 1 << 20, c.srcName(), 0, bytes)),
                    List.of(c)));
          } else {
            Shard sh = new Shard(new long[rank], Shape.of(size), "s", 1 << 20, EL, "d");
            staged.add(
                new StagedShard(
                    c.srcName(),
                    0,
                    sh,
                    DType.F32,
                    new PullSegment("s", 1 << 20, "stage-" + c.srcName(), 0, bytes),
                    List.of(c)));
          }
        }
      }
      if (e >= 0 && mutation == Mutation.DOUBLE) {
        add(exact, name, e, 1);
      }
    }
    // Shuffle the exact segments: the gate must not depend on plan order.
    java.util.Collections.shuffle(exact, rnd);
    Capture capture = new Capture(CaptureResult.of(List.of()), layout, padding);
    TransferPlan plan =
        new TransferPlan(
            exact, List.of(), List.of(), full, List.of(), exact.size(), 0, Map.of(), staged);
    return new Generated(capture, plan, victimParam, victim);
  }

  @Test
  void correctPlansPassAndOneDroppedOrDoubledElementIsAlwaysRejected() {
    long seed = System.nanoTime();
    Random rnd = new Random(seed);
    int rejected = 0;
    for (int i = 0; i < 3000; i++) {
      Mutation m = Mutation.values()[i % 3];
      Generated g = generate(rnd, m);
      String where =
          "seed "
              + seed
              + " iteration "
              + i
              + " "
              + m
              + " "
              + g.param()
              + "["
              + g.element()
              + "] plan "
              + g.plan();
      if (m == Mutation.NONE) {
        assertDoesNotThrow(() -> ElementCoverage.check(g.capture(), Map.of(), g.plan()), where);
      } else {
        IncompleteRefitException e =
            assertThrows(
                IncompleteRefitException.class,
                () -> ElementCoverage.check(g.capture(), Map.of(), g.plan()),
                where);
        assertEquals(List.of(g.param()), e.missing(), where + ": " + e.getMessage());
        assertTrue(
            e.getMessage().contains(m == Mutation.DROP ? "never written" : "written 2 times"),
            where + ": " + e.getMessage());
        assertTrue(
            e.getMessage().contains("[" + g.element() + ", "), where + ": " + e.getMessage());
        rejected++;
      }
    }
    assertEquals(2000, rejected);
  }

  @Test
  void aStagingBufferWithAMissingShardIsRejectedEvenWhenItsCopiesCoverTheParameter() {
    RecordedCopy c = RecordedCopy.contiguous("w", List.of(), "p", 0, Shape.of(4), DType.F32);
    FullPullSource f =
        new FullPullSource(
            "w",
            Shape.of(4),
            DType.F32,
            EL,
            List.of(new PullSegment("s", 1 << 20, "w", 0, 2 * EL)),
            List.of(c)); // half of the source never read
    Capture capture =
        new Capture(
            CaptureResult.of(List.of(c)), Map.of("p", new ParamSpec(Shape.of(4), DType.F32)));
    TransferPlan plan =
        new TransferPlan(List.of(), List.of(), List.of(), List.of(f), List.of(), 1, 16, Map.of());
    IncompleteRefitException e =
        assertThrows(
            IncompleteRefitException.class, () -> ElementCoverage.check(capture, Map.of(), plan));
    assertTrue(
        e.getMessage().contains("full-pull staging of 'w': bytes [8, 16) is never written"),
        e.getMessage());
  }

  private static void add(List<PullSegment> out, String param, long element, long count) {
    if (count > 0) {
      out.add(new PullSegment("s", (1L << 30) + element * EL, param, element * EL, count * EL));
    }
  }

  private static long[] add(long[] a, long[] b) {
    long[] r = new long[a.length];
    for (int i = 0; i < a.length; i++) {
      r[i] = a[i] + b[i];
    }
    return r;
  }

  private static long[] unravel(long e, long[] dims) {
    long[] idx = new long[dims.length];
    for (int d = dims.length - 1; d >= 0; d--) {
      idx[d] = e % dims[d];
      e /= dims[d];
    }
    return idx;
  }

  private static boolean contains(Box box, long[] idx) {
    for (int d = 0; d < idx.length; d++) {
      if (idx[d] < box.lo(d) || idx[d] >= box.hi(d)) {
        return false;
      }
    }
    return true;
  }

  /** The row-major runs {start element, length} of a box: one per index of all but the last dim. */
  private static List<long[]> runs(Box box, long[] dims) {
    int rank = dims.length;
    long[] strides = Shape.of(dims).rowMajorStrides();
    List<long[]> out = new ArrayList<>();
    long[] idx = box.lo();
    while (true) {
      long start = 0;
      for (int d = 0; d < rank; d++) {
        start += idx[d] * strides[d];
      }
      out.add(new long[] {start, box.hi(rank - 1) - box.lo(rank - 1)});
      int d = rank - 2;
      while (d >= 0 && ++idx[d] == box.hi(d)) {
        idx[d] = box.lo(d);
        d--;
      }
      if (d < 0) {
        return out;
      }
    }
  }
}
