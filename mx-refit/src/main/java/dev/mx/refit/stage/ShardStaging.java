package dev.mx.refit.stage;

import dev.mx.api.DType;
import dev.mx.api.annotation.Internal;
import dev.mx.api.digest.TileDigests;
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
 * The shard-staging stage: decides which publisher shards land whole in a staging buffer of their
 * own, to be digest-verified before any copy reads them.
 *
 * <p>Two kinds of staged shards come out of it. The planner's {@link TransferPlan#stagedShards()}
 * (the {@code shard} bounding mode) are kept with their shard-relative copies. And, when every
 * installed byte must be verified ({@code mx.receiver.verify=all}), every shard that the exact or
 * convert segments read only in part is staged here: its segments leave the wire and become local
 * byte runs out of the staged, verified shard (one descriptor instead of many, the shard's bytes
 * instead of the parts). Shards the segments read whole stay on the wire and are verified where
 * they land. A shard published with tile digests is not staged whole: the tiles its segments hold
 * whole stay on the wire (verified tile by tile where they land), and only the partly held boundary
 * tiles are staged, so the extra wire bytes stay under two tiles per partly read stretch of the
 * shard.
 */
@Internal
public final class ShardStaging {

  /**
   * Bytes {@code [stagingByte, stagingByte + nbytes)} of a staged shard go to byte {@code dstByte}
   * of a target.
   */
  public record Run(long stagingByte, long dstByte, long nbytes) {}

  /**
   * One shard staged whole, or one tile of it ({@code tile >= 0}, verified by its tile digest).
   * {@code segment} reads the shard (or the tile) into staging buffer {@code key} at byte 0; {@code
   * paramRuns} (by parameter) and {@code convertRuns} (by convert index) are this receiver's
   * re-routed segments, their staging bytes relative to the buffer; {@code copies} are the
   * planner's shard-relative copies (empty for re-routed ones).
   */
  public record Staged(
      String key,
      String source,
      int shardIndex,
      Shard shard,
      DType dtype,
      PullSegment segment,
      Map<String, List<Run>> paramRuns,
      Map<Integer, List<Run>> convertRuns,
      List<RecordedCopy> copies,
      int tile) {

    /** Bytes of the staging buffer: the shard's, or the tile's. */
    public long stagingBytes() {
      return segment.nbytes();
    }

    /** The digest the staged bytes must have: the shard's, or the tile's; null when unpublished. */
    public String expectedDigest() {
      return tile < 0
          ? shard.digest()
          : shard.usableTiles() == null ? null : shard.usableTiles().digest(tile);
    }

    /** What a mismatch names beside the shard: null for the shard, else the tile and its bytes. */
    public String region() {
      return tile < 0
          ? null
          : "tile "
              + tile
              + " (shard bytes ["
              + (segment.srcAddr() - shard.addr())
              + ", "
              + (segment.srcAddr() - shard.addr() + segment.nbytes())
              + "))";
    }

    /**
     * Bytes this shard's copies and runs move out of staging (an estimate for planner copies: the
     * shard).
     */
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
   * The plan as the wire sees it after staging: the exact and convert segments that still go
   * straight to their destinations, and the staged shards.
   */
  public record Result(TransferPlan wirePlan, List<Staged> staged, int restaged) {}

  private ShardStaging() {}

  /**
   * Applies staging to a plan.
   *
   * @param stagePartial re-route segments that read a shard in part through a staged copy of it
   * @throws UnverifiableShardException when a segment reads bytes no published shard of a source
   *     holds
   */
  public static Result apply(
      TransferPlan plan, Map<String, SourceInfo> sources, boolean stagePartial) {
    List<Staged> staged = new ArrayList<>();
    for (int i = 0; i < plan.stagedShards().size(); i++) {
      StagedShard s = plan.stagedShards().get(i);
      staged.add(
          new Staged(
              s.segment().paramName(),
              s.srcName(),
              s.shardIndex(),
              s.shard(),
              s.dtype(),
              s.segment(),
              Map.of(),
              Map.of(),
              s.copies(),
              -1));
    }
    if (!stagePartial) {
      return new Result(plan, staged, 0);
    }
    ShardIndex index = new ShardIndex(sources);
    // Every exact and convert segment, attributed to the shard it reads from.
    Map<ShardIndex.Ref, List<long[]>> ranges = new HashMap<>();
    attribute(plan.segments(), index, ranges);
    for (ConvertSource c : plan.converts()) {
      attribute(c.segments(), index, ranges);
    }
    Map<ShardIndex.Ref, Builder> partial = new LinkedHashMap<>();
    Map<ShardIndex.Ref, Map<Integer, Builder>> tiled = new LinkedHashMap<>();
    for (Map.Entry<ShardIndex.Ref, List<long[]>> e : ranges.entrySet()) {
      ShardIndex.Ref ref = e.getKey();
      if (coversWhole(e.getValue(), ref.shard().byteSize())) {
        continue;
      }
      TileDigests tiles = ref.shard().usableTiles();
      if (tiles == null) {
        partial.put(ref, new Builder(ref, -1, 0, ref.shard().byteSize()));
      } else {
        // Tiles the reads hold whole stay on the wire (verified where they land); only the partly
        // held boundary tiles are pulled whole into staging.
        List<Integer> partly = partlyHeldTiles(e.getValue(), tiles, ref.shard().byteSize());
        if (partly.isEmpty()) {
          continue; // every touched tile held whole: all on the wire, verified tile by tile
        }
        if (partly.size() == tiles.digests().size() || tiles.byColumns()) {
          // Every tile held in part (a byte-tiled shard whose rows are split reads part of every
          // tile): one whole-shard read and digest moves the same bytes with far fewer descriptors
          // and checks. A column tile is no single byte range to stage, so a partly held one
          // stages its shard whole too.
          partial.put(ref, new Builder(ref, -1, 0, ref.shard().byteSize()));
          continue;
        }
        Map<Integer, Builder> boundary = new LinkedHashMap<>();
        for (int k : partly) {
          boundary.put(
              k, new Builder(ref, k, tiles.start(k), tiles.end(k, ref.shard().byteSize())));
        }
        tiled.put(ref, boundary);
      }
    }
    if (partial.isEmpty() && tiled.isEmpty()) {
      return new Result(plan, staged, 0);
    }
    List<PullSegment> exact = new ArrayList<>(plan.segments().size());
    for (PullSegment s : plan.segments()) {
      route(
          s,
          index,
          partial,
          tiled,
          exact,
          b -> b.paramRuns.computeIfAbsent(s.paramName(), k -> new ArrayList<>()));
    }
    List<ConvertSource> converts = new ArrayList<>(plan.converts().size());
    for (int i = 0; i < plan.converts().size(); i++) {
      ConvertSource c = plan.converts().get(i);
      List<PullSegment> kept = new ArrayList<>();
      int ci = i;
      for (PullSegment s : c.segments()) {
        route(
            s,
            index,
            partial,
            tiled,
            kept,
            b -> b.convertRuns.computeIfAbsent(ci, k -> new ArrayList<>()));
      }
      converts.add(new ConvertSource(c.paramName(), c.destShape(), c.srcDtype(), kept));
    }
    int n = staged.size();
    List<Builder> builders = new ArrayList<>(partial.values());
    tiled.values().forEach(m -> builders.addAll(m.values()));
    for (Builder b : builders) {
      String key = "stage#" + (n++) + ":" + b.ref.source() + (b.tile < 0 ? "" : ":tile" + b.tile);
      Shard sh = b.ref.shard();
      staged.add(
          new Staged(
              key,
              b.ref.source(),
              b.ref.index(),
              sh,
              sources.get(b.ref.source()).dtype(),
              new PullSegment(sh.session(), sh.addr() + b.lo, key, 0, b.hi - b.lo),
              Map.copyOf(b.paramRuns),
              Map.copyOf(b.convertRuns),
              List.of(),
              b.tile));
    }
    TransferPlan wire =
        new TransferPlan(
            exact,
            plan.fallback(),
            converts,
            plan.fullPulls(),
            plan.unboundedSources(),
            plan.exactDescriptorCount(),
            plan.exactBytes(),
            plan.fallbackReasons(),
            plan.stagedShards());
    return new Result(wire, staged, builders.size());
  }

  /**
   * Sends {@code s} where it goes: unchanged to {@code wire} when its shard is read whole; as runs
   * out of the staged shard when the shard is staged whole; split at tile edges when the shard is
   * verified by tile, the parts inside boundary tiles becoming runs out of those tiles' staging and
   * the rest staying on the wire.
   */
  private static void route(
      PullSegment s,
      ShardIndex index,
      Map<ShardIndex.Ref, Builder> partial,
      Map<ShardIndex.Ref, Map<Integer, Builder>> tiled,
      List<PullSegment> wire,
      java.util.function.Function<Builder, List<Run>> runsOf) {
    ShardIndex.Ref ref = s.nbytes() == 0 ? null : index.find(s);
    Builder whole = ref == null ? null : partial.get(ref);
    Map<Integer, Builder> boundary = ref == null ? null : tiled.get(ref);
    if (whole != null) {
      runsOf.apply(whole).add(new Run(s.srcAddr() - ref.shard().addr(), s.dstByte(), s.nbytes()));
      return;
    }
    if (boundary == null || boundary.isEmpty()) {
      wire.add(s);
      return;
    }
    TileDigests tiles = ref.shard().usableTiles();
    long base = ref.shard().addr();
    long lo = s.srcAddr() - base;
    long hi = lo + s.nbytes();
    long keptFrom = -1; // start (shard byte) of the wire part being gathered
    for (long at = lo; at < hi; ) {
      int k = (int) (at / tiles.tileBytes());
      long end = Math.min(hi, tiles.end(k, ref.shard().byteSize()));
      Builder b = boundary.get(k);
      if (b == null) {
        if (keptFrom < 0) {
          keptFrom = at;
        }
      } else {
        if (keptFrom >= 0) {
          wire.add(part(s, lo, keptFrom, at));
          keptFrom = -1;
        }
        runsOf.apply(b).add(new Run(at - b.lo, s.dstByte() + (at - lo), end - at));
      }
      at = end;
    }
    if (keptFrom >= 0) {
      wire.add(keptFrom == lo ? s : part(s, lo, keptFrom, hi));
    }
  }

  /** Shard bytes {@code [from, to)} of segment {@code s}, which starts at shard byte {@code lo}. */
  private static PullSegment part(PullSegment s, long lo, long from, long to) {
    return new PullSegment(
        s.session(),
        s.srcAddr() + (from - lo),
        s.paramName(),
        s.dstByte() + (from - lo),
        to - from);
  }

  /**
   * Tiles some range touches but the ranges together do not cover whole (ranges sorted by start),
   * in tile order.
   */
  private static List<Integer> partlyHeldTiles(
      List<long[]> sortedRanges, TileDigests tiles, long size) {
    List<long[]> merged = new ArrayList<>();
    for (long[] r : sortedRanges) {
      long[] last = merged.isEmpty() ? null : merged.get(merged.size() - 1);
      if (last != null && r[0] <= last[1]) {
        last[1] = Math.max(last[1], r[1]);
      } else {
        merged.add(new long[] {r[0], r[1]});
      }
    }
    // The merged ranges do not overlap, so the bytes they put in a tile add up to its coverage.
    java.util.TreeMap<Integer, long[]> held = new java.util.TreeMap<>();
    for (long[] m : merged) {
      tiles.forEachPart(
          m[0],
          Math.min(m[1], size),
          (k, regionByte, shardByte, n) -> held.computeIfAbsent(k, x -> new long[1])[0] += n);
    }
    List<Integer> out = new ArrayList<>();
    held.forEach(
        (k, n) -> {
          if (n[0] < tiles.regionBytes(k, size)) {
            out.add(k);
          }
        });
    return out;
  }

  private static void attribute(
      List<PullSegment> segments, ShardIndex index, Map<ShardIndex.Ref, List<long[]>> ranges) {
    for (PullSegment s : segments) {
      if (s.nbytes() == 0) {
        continue;
      }
      ShardIndex.Ref ref = index.find(s);
      if (ref == null) {
        throw new UnverifiableShardException(
            s.paramName(),
            new long[0],
            s.session(),
            "a segment reads bytes ["
                + s.srcAddr()
                + ", "
                + (s.srcAddr() + s.nbytes())
                + ") that no published shard of session '"
                + s.session()
                + "' holds, so they cannot be verified");
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

  /**
   * One staging buffer being planned: a whole shard ({@code tile < 0}) or one tile, shard bytes
   * [lo, hi).
   */
  private static final class Builder {
    final ShardIndex.Ref ref;
    final int tile;
    final long lo;
    final long hi;
    final Map<String, List<Run>> paramRuns = new LinkedHashMap<>();
    final Map<Integer, List<Run>> convertRuns = new LinkedHashMap<>();

    Builder(ShardIndex.Ref ref, int tile, long lo, long hi) {
      this.ref = ref;
      this.tile = tile;
      this.lo = lo;
      this.hi = hi;
    }
  }

  /**
   * Finds the published shard whose bytes hold a segment's source range, by session and address.
   */
  static final class ShardIndex {
    /** Shard {@code index} of source {@code source}: equal by those two alone. */
    record Ref(String source, int index, Shard shard) {
      // Hashing the shard would hash its thousands of tile digests once per segment attributed.
      @Override
      public boolean equals(Object o) {
        return o instanceof Ref r && r.index == index && r.source.equals(source);
      }

      @Override
      public int hashCode() {
        return source.hashCode() * 31 + index;
      }
    }

    private final Map<String, Ref[]> bySession = new HashMap<>();
    private final Map<String, long[]> starts = new HashMap<>();

    ShardIndex(Map<String, SourceInfo> sources) {
      Map<String, List<Ref>> lists = new HashMap<>();
      sources.forEach(
          (name, info) -> {
            for (int i = 0; i < info.shards().size(); i++) {
              Shard s = info.shards().get(i);
              if (s.byteSize() > 0) {
                lists.computeIfAbsent(s.session(), k -> new ArrayList<>()).add(new Ref(name, i, s));
              }
            }
          });
      lists.forEach(
          (session, refs) -> {
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
