package dev.mx.layout.trainer;

import dev.mx.api.Shape;
import dev.mx.layout.LayoutException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * Turns one Megatron parameter into zero-copy, Hugging Face–named alias shards, following
 * ModelExpress (ARCHITECTURE §7.6): single names (column, row, replicated, vocab-parallel), gated
 * MLP and expert fc1 halves ({@code gate_then_up}), and fused QKV by band intersection (global head
 * counts) or by local groups (legacy). Every alias is a contiguous row-major run inside the
 * parameter, given as an element offset.
 */
public final class MegatronAliases {

  private MegatronAliases() {}

  /**
   * The alias shards of {@code spec}.
   *
   * @param published the published flag every resulting alias carries
   * @throws LayoutException naming the tensor when the spec breaks a rule of ModelExpress
   *     (ARCHITECTURE §7.6)
   */
  public static List<AliasShard> resolve(MegatronTensorSpec spec, boolean published) {
    requireContiguous(spec);
    return switch (spec.role()) {
      case QKV_COLUMN -> qkv(spec, published);
      case GATED_MLP_COLUMN, EXPERT_COLUMN ->
          spec.hfNames().size() == 2 ? gated(spec, published) : single(spec, published);
      default -> single(spec, published);
    };
  }

  private static void requireContiguous(MegatronTensorSpec spec) {
    long[] want = spec.localShape().rowMajorStrides();
    long[] have = spec.localStrides();
    for (int d = 0; d < want.length; d++) {
      if (spec.localShape().dim(d) > 1 && have[d] != want[d]) {
        throw fail(
            spec,
            "is not contiguous (strides "
                + Arrays.toString(have)
                + ", row-major "
                + Arrays.toString(want)
                + "); an alias must be an address and a shape inside the registered tensor");
      }
    }
  }

  private static List<AliasShard> single(MegatronTensorSpec spec, boolean published) {
    if (spec.hfNames().size() != 1) {
      throw fail(
          spec,
          "role " + spec.role().label() + " publishes exactly one name, got " + spec.hfNames());
    }
    String hf = spec.hfNames().getFirst();
    Shape local = spec.localShape();
    Shape global = spec.globalShape();
    requireSameRank(spec);
    long[] offset = new long[local.rank()];
    long[] shape = local.dims();
    if (spec.placement() == Placement.REPLICATE) {
      if (!local.equals(global)) {
        throw fail(
            spec,
            "is replicated but its local shape "
                + local
                + " differs from the global shape "
                + global);
      }
    } else {
      int axis = spec.shardAxis();
      long lo = spec.localShardRange()[0];
      long hi = spec.localShardRange()[1];
      requireRangeMatchesLocal(spec, axis, lo, hi);
      for (int d = 0; d < local.rank(); d++) {
        if (d != axis && local.dim(d) != global.dim(d)) {
          throw fail(
              spec,
              "local shape "
                  + local
                  + " differs from global "
                  + global
                  + " in dim "
                  + d
                  + " which is not the shard axis "
                  + axis);
        }
      }
      if (spec.role() == MegatronRole.VOCAB_PARALLEL) {
        if (axis != 0) {
          throw fail(spec, "vocab-parallel rows must be split on axis 0, not " + axis);
        }
        if (lo >= global.dim(0)) {
          return List.of(); // only padding rows: nothing to publish
        }
        shape[0] = Math.min(hi, global.dim(0)) - lo;
      } else if (hi > global.dim(axis)) {
        throw fail(
            spec,
            "shard range ["
                + lo
                + ", "
                + hi
                + ") is outside the global extent "
                + global.dim(axis)
                + " of axis "
                + axis);
      }
      offset[axis] = lo;
    }
    return List.of(new AliasShard(hf, global, offset, Shape.of(shape), spec.name(), 0, published));
  }

  private static List<AliasShard> gated(MegatronTensorSpec spec, boolean published) {
    String order = spec.extras().get("gated_mlp_order");
    if (!"gate_then_up".equals(order)) {
      throw fail(
          spec,
          "gated MLP needs extras gated_mlp_order=gate_then_up, got "
              + (order == null ? "none" : "'" + order + "'"));
    }
    requireSameRank(spec);
    Shape local = spec.localShape();
    Shape global = spec.globalShape();
    int axis = spec.shardAxis() == null ? 0 : spec.shardAxis();
    long localExtent = local.dim(axis);
    if (localExtent % 2 != 0) {
      throw fail(
          spec,
          "gated MLP local extent "
              + localExtent
              + " on axis "
              + axis
              + " is odd; it must hold gate then up halves");
    }
    long half = localExtent / 2;
    long srcRank = 0;
    long srcSize = 1;
    if (spec.placement() == Placement.SHARD) {
      long lo = spec.localShardRange()[0];
      long hi = spec.localShardRange()[1];
      requireRangeMatchesLocal(spec, axis, lo, hi);
      long g = global.dim(axis);
      if (hi > g) {
        throw fail(spec, "shard range [" + lo + ", " + hi + ") is outside the global extent " + g);
      }
      if (g % localExtent != 0 || lo % localExtent != 0) {
        throw fail(
            spec,
            "gated MLP shards must be uniform: global extent "
                + g
                + " and range start "
                + lo
                + " must be multiples of the local extent "
                + localExtent);
      }
      srcRank = lo / localExtent;
      srcSize = g / localExtent;
    }
    if (global.dim(axis) % 2 != 0) {
      throw fail(spec, "gated MLP global extent " + global.dim(axis) + " is odd");
    }
    if (half * srcSize != global.dim(axis) / 2) {
      throw fail(
          spec,
          "gate/up halves of "
              + half
              + " x "
              + srcSize
              + " ranks do not make half the global extent "
              + global.dim(axis));
    }
    long[] strides = local.rowMajorStrides();
    for (int d = 0; d < axis; d++) {
      if (local.dim(d) != 1) {
        throw fail(spec, "the gate and up halves on axis " + axis + " are not contiguous views");
      }
    }
    long[] fullDims = global.dims();
    fullDims[axis] = global.dim(axis) / 2;
    Shape full = Shape.of(fullDims);
    long[] halfDims = local.dims();
    halfDims[axis] = half;
    Shape halfShape = Shape.of(halfDims);
    long[] offset = new long[local.rank()];
    offset[axis] = srcSize > 1 ? srcRank * half : 0;
    return List.of(
        new AliasShard(spec.hfNames().get(0), full, offset, halfShape, spec.name(), 0, published),
        new AliasShard(
            spec.hfNames().get(1),
            full,
            offset,
            halfShape,
            spec.name(),
            half * strides[axis],
            published));
  }

  private static List<AliasShard> qkv(MegatronTensorSpec spec, boolean published) {
    if (spec.hfNames().size() != 3) {
      throw fail(spec, "fused QKV publishes exactly three names (q, k, v), got " + spec.hfNames());
    }
    Shape local = spec.localShape();
    if (local.rank() != 1 && local.rank() != 2) {
      throw fail(spec, "fused QKV must be 2-D (weight) or 1-D (bias), got " + local);
    }
    requireSameRank(spec);
    if (local.rank() == 2 && local.dim(1) != spec.globalShape().dim(1)) {
      throw fail(
          spec,
          "hidden size " + local.dim(1) + " differs from the global " + spec.globalShape().dim(1));
    }
    Map<String, String> x = spec.extras();
    boolean hasHeads = x.containsKey("num_heads");
    boolean hasKv = x.containsKey("num_kv_heads");
    if (hasHeads != hasKv) {
      throw fail(
          spec,
          "global QKV needs both num_heads and num_kv_heads in extras, got only "
              + (hasHeads ? "num_heads" : "num_kv_heads"));
    }
    long lo;
    long hi;
    if (spec.placement() == Placement.SHARD) {
      if (spec.shardAxis() != 0) {
        throw fail(spec, "fused QKV rows must be split on axis 0, not " + spec.shardAxis());
      }
      lo = spec.localShardRange()[0];
      hi = spec.localShardRange()[1];
      requireRangeMatchesLocal(spec, 0, lo, hi);
    } else {
      lo = 0;
      hi = local.dim(0);
    }
    return hasHeads ? qkvGlobal(spec, lo, hi, published) : qkvLegacy(spec, lo, published);
  }

  /**
   * A contiguous run of fused rows that belongs to one projection, starting at {@code destStart}
   * there.
   */
  private record Band(int projection, long start, long length, long destStart) {}

  private static List<AliasShard> qkvGlobal(
      MegatronTensorSpec spec, long lo, long hi, boolean published) {
    Map<String, String> x = spec.extras();
    if (!"by_head".equals(x.get("qkv_interleave"))) {
      throw fail(spec, "global QKV needs qkv_interleave=by_head, got " + x.get("qkv_interleave"));
    }
    long q = intExtra(spec, "num_heads");
    long kv = intExtra(spec, "num_kv_heads");
    long hd = intExtra(spec, "head_dim");
    long qRows = queryRowsPerGroup(spec, "num_heads", q, "num_kv_heads", kv, hd);
    long groupRows = qRows + 2 * hd;
    long totalRows = kv * groupRows;
    if (totalRows != spec.globalShape().dim(0)) {
      throw fail(
          spec,
          "by-head layout of "
              + kv
              + " groups x "
              + groupRows
              + " rows = "
              + totalRows
              + " differs from the global rows "
              + spec.globalShape().dim(0));
    }
    if (hi > totalRows) {
      throw fail(
          spec, "shard range [" + lo + ", " + hi + ") is outside the " + totalRows + " fused rows");
    }
    List<Band> bands = new ArrayList<>();
    for (long g = 0; g < kv; g++) {
      long base = g * groupRows;
      bands.add(new Band(0, base, qRows, g * qRows));
      bands.add(new Band(1, base + qRows, hd, g * hd));
      bands.add(new Band(2, base + qRows + hd, hd, g * hd));
    }
    Shape[] full = projectionShapes(spec, q * hd, kv * hd);
    List<AliasShard> out = new ArrayList<>();
    long mapped = 0;
    for (Band b : bands) {
      long a = Math.max(lo, b.start());
      long e = Math.min(hi, b.start() + b.length());
      if (a >= e) {
        continue;
      }
      out.add(
          rowAlias(
              spec,
              b.projection(),
              full[b.projection()],
              b.destStart() + a - b.start(),
              e - a,
              a - lo,
              published));
      mapped += e - a;
    }
    if (mapped != spec.localShape().dim(0)) {
      throw fail(
          spec,
          "bands map " + mapped + " rows but the local tensor has " + spec.localShape().dim(0));
    }
    return out;
  }

  private static List<AliasShard> qkvLegacy(MegatronTensorSpec spec, long lo, boolean published) {
    long hd = intExtra(spec, "head_dim");
    long qLocal = intExtra(spec, "num_heads_local");
    long kvLocal = intExtra(spec, "num_kv_heads_local");
    long qPerGroup =
        queryRowsPerGroup(spec, "num_heads_local", qLocal, "num_kv_heads_local", kvLocal, hd);
    long groupRows = qPerGroup + 2 * hd;
    long localRows = spec.localShape().dim(0);
    if (localRows != kvLocal * groupRows) {
      throw fail(
          spec,
          "local rows "
              + localRows
              + " differ from "
              + kvLocal
              + " groups x "
              + groupRows
              + " rows");
    }
    long srcRank = spec.placement() == Placement.SHARD ? lo / localRows : 0;
    long srcSize = spec.globalShape().dim(0) / localRows;
    Shape[] full = projectionShapes(spec, srcSize * qLocal * hd, srcSize * kvLocal * hd);
    List<AliasShard> out = new ArrayList<>();
    for (long g = 0; g < kvLocal; g++) {
      long globalGroup = srcRank * kvLocal + g;
      long base = g * groupRows;
      out.add(rowAlias(spec, 0, full[0], globalGroup * qPerGroup, qPerGroup, base, published));
      out.add(rowAlias(spec, 1, full[1], globalGroup * hd, hd, base + qPerGroup, published));
      out.add(rowAlias(spec, 2, full[2], globalGroup * hd, hd, base + qPerGroup + hd, published));
    }
    return out;
  }

  /** Query rows of one KV group, {@code q/kv · head_dim}; the head counts must divide. */
  private static long queryRowsPerGroup(
      MegatronTensorSpec spec, String qKey, long q, String kvKey, long kv, long hd) {
    if (kv <= 0 || q % kv != 0) {
      throw fail(spec, qKey + " " + q + " is not a multiple of " + kvKey + " " + kv);
    }
    return q / kv * hd;
  }

  private static Shape[] projectionShapes(MegatronTensorSpec spec, long qRows, long kvRows) {
    if (spec.localShape().rank() == 1) {
      return new Shape[] {Shape.of(qRows), Shape.of(kvRows), Shape.of(kvRows)};
    }
    long h = spec.globalShape().dim(1);
    return new Shape[] {Shape.of(qRows, h), Shape.of(kvRows, h), Shape.of(kvRows, h)};
  }

  /**
   * {@code rows} rows of projection {@code p} starting at global row {@code destRow}, local row
   * {@code localRow}.
   */
  private static AliasShard rowAlias(
      MegatronTensorSpec spec,
      int p,
      Shape full,
      long destRow,
      long rows,
      long localRow,
      boolean published) {
    long rowElems = spec.localShape().rank() == 1 ? 1 : spec.localShape().dim(1);
    long[] offset = new long[full.rank()];
    offset[0] = destRow;
    long[] shape = full.dims();
    shape[0] = rows;
    return new AliasShard(
        spec.hfNames().get(p),
        full,
        offset,
        Shape.of(shape),
        spec.name(),
        localRow * rowElems,
        published);
  }

  private static void requireSameRank(MegatronTensorSpec spec) {
    if (spec.localShape().rank() != spec.globalShape().rank()) {
      throw fail(
          spec,
          "local shape "
              + spec.localShape()
              + " and global shape "
              + spec.globalShape()
              + " differ in rank");
    }
  }

  private static void requireRangeMatchesLocal(
      MegatronTensorSpec spec, int axis, long lo, long hi) {
    if (lo < 0 || hi <= lo) {
      throw fail(spec, "shard range [" + lo + ", " + hi + ") is empty or negative");
    }
    if (hi - lo != spec.localShape().dim(axis)) {
      throw fail(
          spec,
          "shard range ["
              + lo
              + ", "
              + hi
              + ") spans "
              + (hi - lo)
              + " but the local extent on axis "
              + axis
              + " is "
              + spec.localShape().dim(axis));
    }
  }

  private static long intExtra(MegatronTensorSpec spec, String key) {
    String v = spec.extras().get(key);
    if (v == null) {
      throw fail(spec, "extras need " + key);
    }
    try {
      return Long.parseLong(v.trim());
    } catch (NumberFormatException e) {
      throw fail(spec, "extras " + key + "='" + v + "' is not an integer");
    }
  }

  private static LayoutException fail(MegatronTensorSpec spec, String what) {
    return new LayoutException(
        "Megatron tensor '" + spec.name() + "' (" + spec.role().label() + "): " + what);
  }
}
