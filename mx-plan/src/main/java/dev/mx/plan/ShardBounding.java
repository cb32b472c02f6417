package dev.mx.plan;

import dev.mx.api.error.UnsupportedReshardException;
import dev.mx.api.plan.BoundingDecision;
import dev.mx.api.plan.BoundingDecision.Option;
import dev.mx.api.plan.BoundingDecision.OptionCost;
import dev.mx.api.plan.OpSpec;
import dev.mx.api.plan.PullSegment;
import dev.mx.api.plan.RecordedCopy;
import dev.mx.api.plan.Shard;
import dev.mx.api.plan.StagedShard;
import dev.mx.api.transport.TransportCosts;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * The cost model of shard bounding: for one source, weighs exact segments, shard staging and a
 * whole-source full pull, and builds the winner's staged shards or full-pull segments.
 *
 * <p>Shard staging pulls each publisher shard that some copy touches with one descriptor (its whole
 * contiguous buffer) and cuts each copy's needed box into per-shard boxes. A resolved copy is "box
 * {@code [lo, hi)} of the source, viewed with source dim {@code perm[d]} as view dim {@code d},
 * written at {@code destOffset} with {@code destStride}"; its part in a shard is the same form
 * relative to the shard ({@code narrow}s then a {@code permute}) at a destination offset moved by
 * the part's origin. Each cut copy is resolved again against the shard's shape and must give
 * exactly the expected box and strides, or staging is refused for the source.
 */
final class ShardBounding {
  private static final double TIE = 1e-12;

  private ShardBounding() {}

  /**
   * The outcome for one source: the decision, and the staged shards or full-pull segments of the
   * winner; or a fallback reason when no option can read it.
   */
  record Choice(
      BoundingDecision decision,
      List<StagedShard> staged,
      List<PullSegment> fullSegments,
      String fallbackReason) {}

  /**
   * Decides for one source. {@code sameType} are its copies in the source's dtype, {@code
   * converted} those in another dtype (resolved against their real destination; read exactly they
   * cost {@code convertCount} segments and {@code convertBytes} bytes through convert staging,
   * staged or full-pulled they are cast while replayed); {@code replayOnly} are copies that are no
   * box of the source.
   */
  static Choice decide(
      SourceGeometry geo,
      List<ReshardPlanner.ResolvedCopy> sameType,
      List<ReshardPlanner.ResolvedCopy> converted,
      long convertCount,
      long convertBytes,
      List<RecordedCopy> replayOnly,
      String replayOnlyReason,
      PlanOptions options,
      ContiguousRuns runs) {
    List<ReshardPlanner.ResolvedCopy> exact = new ArrayList<>(sameType.size() + converted.size());
    exact.addAll(sameType);
    exact.addAll(converted);
    TransportCosts costs = options.costs();
    String name = geo.name;
    int elsize = geo.info.elsize();
    long exactDesc = convertCount;
    long exactWire = convertBytes;
    for (ReshardPlanner.ResolvedCopy r : sameType) {
      exactDesc = Math.addExact(exactDesc, r.count());
      exactWire = Math.addExact(exactWire, r.bytes());
    }
    long bound =
        exactWire
            + (long)
                Math.min(Long.MAX_VALUE / 2.0, Math.floor(exactWire * options.maxExtraWireRatio()));
    boolean forced = !replayOnly.isEmpty();

    // exact
    // (read exactly, dtype-changing copies still pass through a local cast out of their convert
    // staging)
    OptionCost exactCost =
        new OptionCost(
            Option.EXACT,
            exactDesc,
            exactWire,
            convertBytes,
            costs.seconds(exactDesc, exactWire, convertBytes),
            forced ? replayOnlyReason : null);

    // shard staging
    int k = geo.shards.length;
    int[] rep = representatives(geo);
    boolean[] touched = new boolean[k];
    long reslice = 0;
    for (ReshardPlanner.ResolvedCopy r : exact) {
      for (int i = 0; i < k; i++) {
        if (rep[i] == i
            && runs.overlap(r.lo(), r.hi(), geo.lo[i], geo.hi[i], geo.strides[i], r.dstStride())) {
          touched[i] = true;
          reslice = Math.addExact(reslice, Math.multiplyExact(runs.elements(), elsize));
        }
      }
    }
    // Copies are cut only when staging would win: most sources never need it.
    List<List<RecordedCopy>> cut = null;
    String cutFailure = forced ? replayOnlyReason : null;
    long stageDesc = 0;
    long stageWire = 0;
    for (int i = 0; i < k; i++) {
      if (touched[i]) {
        stageDesc++;
        stageWire = Math.addExact(stageWire, geo.shards[i].byteSize());
      }
    }
    String stageReject =
        cutFailure != null ? cutFailure : overBound(stageWire, exactWire, bound, options);
    if (stageReject == null && stageDesc == 0) {
      stageReject = "no copy touches any shard";
    }
    OptionCost stageCost =
        new OptionCost(
            Option.SHARD_STAGING,
            stageDesc,
            stageWire,
            reslice,
            costs.seconds(stageDesc, stageWire, reslice),
            stageReject);

    // Whole-source full pull: ModelExpress's dim-0 partition; for copies that are no box, an
    // identity pull over
    // any layout (otherwise staging every shard always costs less than that).
    List<PullSegment> fullSegs = new ArrayList<>(k);
    String fullReject = null;
    String notAPartition = ReshardPlanner.dim0Partition(geo, fullSegs);
    if (notAPartition != null) {
      fullSegs = null;
      if (forced) {
        try {
          long n = ReshardPlanner.identityPullCount(geo);
          if (n > options.maxDescriptors()) {
            fullReject =
                "an identity pull over this shard layout needs "
                    + n
                    + " descriptors, more than the limit "
                    + options.maxDescriptors();
          } else {
            fullSegs = ReshardPlanner.identityPullSegments(geo);
          }
        } catch (UnsupportedReshardException holes) {
          fullReject = notAPartition + "; " + holes.reason();
        }
      } else {
        fullReject = notAPartition;
      }
    }
    long fullDesc = fullSegs == null ? geo.shards.length : fullSegs.size();
    long fullWire = geo.info.globalShape().byteSize(elsize);
    long fullReslice = forced ? fullWire : reslice;
    if (fullReject == null && !forced) {
      fullReject = overBound(fullWire, exactWire, bound, options);
    }
    OptionCost fullCost =
        new OptionCost(
            Option.FULL_PULL,
            fullDesc,
            fullWire,
            fullReslice,
            costs.seconds(fullDesc, fullWire, fullReslice),
            fullReject);

    List<OptionCost> all = List.of(exactCost, fullCost, stageCost);
    OptionCost best = cheapest(all);
    if (best == stageCost) {
      cut = new ArrayList<>(k);
      for (int i = 0; i < k; i++) {
        cut.add(null);
      }
      String failure = cutAll(geo, exact, rep, runs, cut);
      if (failure != null) {
        stageCost =
            new OptionCost(
                Option.SHARD_STAGING, stageDesc, stageWire, reslice, stageCost.seconds(), failure);
        all = List.of(exactCost, fullCost, stageCost);
        best = cheapest(all);
      }
    }
    if (best == null) {
      return new Choice(
          null,
          List.of(),
          List.of(),
          "shard bounding found no way to read the source: "
              + replayOnlyReason
              + "; full pull: "
              + fullReject);
    }
    BoundingDecision d = new BoundingDecision(name, best.option(), reason(best, all), all);
    return switch (best.option()) {
      case EXACT -> new Choice(d, List.of(), List.of(), null);
      case FULL_PULL -> new Choice(d, List.of(), fullSegs, null);
      case SHARD_STAGING -> new Choice(d, stagedShards(geo, touched, cut), List.of(), null);
    };
  }

  private static OptionCost cheapest(List<OptionCost> all) {
    OptionCost best = null;
    for (OptionCost o : all) {
      if (o.feasible() && (best == null || o.seconds() < best.seconds() * (1 - TIE))) {
        best = o;
      }
    }
    return best;
  }

  /** Cuts every copy into its per-shard parts; returns why one cannot be cut, or null. */
  private static String cutAll(
      SourceGeometry geo,
      List<ReshardPlanner.ResolvedCopy> exact,
      int[] rep,
      ContiguousRuns runs,
      List<List<RecordedCopy>> cut) {
    for (ReshardPlanner.ResolvedCopy r : exact) {
      for (int i = 0; i < rep.length; i++) {
        if (rep[i] != i
            || !runs.overlap(r.lo(), r.hi(), geo.lo[i], geo.hi[i], geo.strides[i], r.dstStride())) {
          continue;
        }
        try {
          RecordedCopy part = cutCopy(r, geo, i);
          if (cut.get(i) == null) {
            cut.set(i, new ArrayList<>());
          }
          cut.get(i).add(part);
        } catch (UnsupportedReshardException | IllegalArgumentException e) {
          return "copy into '"
              + r.copy().paramName()
              + "' cannot be cut per shard at shard #"
              + i
              + ": "
              + e.getMessage();
        }
      }
    }
    return null;
  }

  private static String overBound(long wire, long exactWire, long bound, PlanOptions options) {
    if (wire <= bound) {
      return null;
    }
    return String.format(
        Locale.ROOT,
        "reads %d bytes, %d more than the exact %d; the bound is %.3g x the exact bytes"
            + " (-D%s)",
        wire,
        wire - exactWire,
        exactWire,
        options.maxExtraWireRatio(),
        PlanOptions.MAX_EXTRA_WIRE_RATIO_PROPERTY);
  }

  private static String reason(OptionCost best, List<OptionCost> all) {
    StringBuilder sb = new StringBuilder();
    sb.append(best.option().label()).append(" is cheapest: ").append(describe(best));
    for (OptionCost o : all) {
      if (o == best) {
        continue;
      }
      sb.append("; ").append(o.option().label());
      if (o.feasible()) {
        sb.append(' ').append(describe(o));
      } else {
        sb.append(" not taken: ").append(o.rejected());
      }
    }
    return sb.toString();
  }

  private static String describe(OptionCost o) {
    return String.format(
        Locale.ROOT,
        "%d descriptors, %d wire bytes, %d re-sliced, est. %.3g ms",
        o.descriptors(),
        o.wireBytes(),
        o.resliceBytes(),
        o.seconds() * 1e3);
  }

  /**
   * For each shard, the first shard with the same box (a replica stands for itself once). Empty
   * shards: -1.
   */
  private static int[] representatives(SourceGeometry geo) {
    int k = geo.shards.length;
    int[] rep = new int[k];
    for (int i = 0; i < k; i++) {
      rep[i] = i;
      for (int d = 0; d < geo.rank; d++) {
        if (geo.hi[i][d] <= geo.lo[i][d]) {
          rep[i] = -1;
        }
      }
      for (int j = 0; j < i && rep[i] == i; j++) {
        if (rep[j] == j
            && Arrays.equals(geo.lo[i], geo.lo[j])
            && Arrays.equals(geo.hi[i], geo.hi[j])) {
          rep[i] = j;
        }
      }
    }
    return rep;
  }

  /** The part of {@code r} that shard {@code i} holds, as a copy over the shard's own tensor. */
  static RecordedCopy cutCopy(ReshardPlanner.ResolvedCopy r, SourceGeometry geo, int i) {
    int n = geo.rank;
    long[] slo = geo.lo[i];
    long[] shi = geo.hi[i];
    long[] shardDims = new long[n];
    long[] olo = new long[n];
    long[] ohi = new long[n];
    long destOffset = r.copy().destOffset();
    List<OpSpec> chain = new ArrayList<>();
    for (int s = 0; s < n; s++) {
      shardDims[s] = shi[s] - slo[s];
      olo[s] = Math.max(r.lo()[s], slo[s]);
      ohi[s] = Math.min(r.hi()[s], shi[s]);
      if (olo[s] - slo[s] != 0 || ohi[s] - olo[s] != shardDims[s]) {
        chain.add(OpSpec.narrow(s, olo[s] - slo[s], ohi[s] - olo[s]));
      }
      destOffset =
          Math.addExact(destOffset, Math.multiplyExact(olo[s] - r.lo()[s], r.dstStride()[s]));
    }
    int[] perm = r.perm();
    boolean identity = true;
    long[] viewShape = new long[n];
    List<Object> dims = new ArrayList<>(n);
    for (int d = 0; d < n; d++) {
      identity &= perm[d] == d;
      viewShape[d] = ohi[perm[d]] - olo[perm[d]];
      dims.add((long) perm[d]);
    }
    if (!identity) {
      chain.add(new OpSpec("permute", dims, null));
    }
    RecordedCopy c = r.copy();
    RecordedCopy part =
        new RecordedCopy(
            c.srcName(),
            chain,
            c.paramName(),
            destOffset,
            dev.mx.api.Shape.of(viewShape),
            c.destStride(),
            c.destDtype());
    // Prove the part means what it should: resolved against the shard it is exactly the overlap,
    // same strides.
    SliceResolver.RawSlice back = SliceResolver.resolveRaw(part, shardDims);
    for (int s = 0; s < n; s++) {
      if (back.lo()[s] != olo[s] - slo[s]
          || back.hi()[s] - back.lo()[s] != ohi[s] - olo[s]
          || (ohi[s] - olo[s] > 1 && back.destStrideSrc()[s] != r.dstStride()[s])) {
        throw new UnsupportedReshardException(
            c.srcName(),
            "the per-shard view "
                + chain
                + " resolves to "
                + Arrays.toString(back.lo())
                + ".."
                + Arrays.toString(back.hi())
                + " strides "
                + Arrays.toString(back.destStrideSrc())
                + ", not the overlap "
                + Arrays.toString(olo)
                + ".."
                + Arrays.toString(ohi)
                + " strides "
                + Arrays.toString(r.dstStride()));
      }
    }
    return part;
  }

  private static List<StagedShard> stagedShards(
      SourceGeometry geo, boolean[] touched, List<List<RecordedCopy>> cut) {
    List<StagedShard> out = new ArrayList<>();
    for (int i = 0; i < touched.length; i++) {
      if (!touched[i]) {
        continue;
      }
      Shard s = geo.shards[i];
      PullSegment seg =
          new PullSegment(
              s.session(), s.addr(), StagedShard.stagingName(geo.name, i), 0, s.byteSize());
      out.add(new StagedShard(geo.name, i, s, geo.info.dtype(), seg, cut.get(i)));
    }
    return out;
  }
}
