package dev.mx.api.plan;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The planner's output (ModelExpress; ARCHITECTURE §7.3): exact segments into parameters, full
 * pulls into staging, convert reads, the sources that fell back (with reasons) or stayed unbounded,
 * and the exact-plan baseline counters from which savings and extra wire bytes derive.
 *
 * <p>{@code bounding} says which planner produced it; a {@link BoundingMode#SHARD shard}-bounded
 * plan also carries {@code stagedShards} and one {@link BoundingDecision} per planned source (which
 * option won and why).
 */
public record TransferPlan(
    List<PullSegment> segments,
    List<String> fallback,
    List<ConvertSource> converts,
    List<FullPullSource> fullPulls,
    List<String> unboundedSources,
    long exactDescriptorCount,
    long exactBytes,
    Map<String, String> fallbackReasons,
    List<StagedShard> stagedShards,
    BoundingMode bounding,
    List<BoundingDecision> boundingDecisions) {

  /**
   * A plan of the given staged shards, without recorded bounding decisions ({@link
   * BoundingMode#SHARD}).
   */
  public TransferPlan(
      List<PullSegment> segments,
      List<String> fallback,
      List<ConvertSource> converts,
      List<FullPullSource> fullPulls,
      List<String> unboundedSources,
      long exactDescriptorCount,
      long exactBytes,
      Map<String, String> fallbackReasons,
      List<StagedShard> stagedShards) {
    this(
        segments,
        fallback,
        converts,
        fullPulls,
        unboundedSources,
        exactDescriptorCount,
        exactBytes,
        fallbackReasons,
        stagedShards,
        stagedShards.isEmpty() ? BoundingMode.MODELEXPRESS : BoundingMode.SHARD,
        List.of());
  }

  /** A plan without shard staging (the ModelExpress-compatible planner's output). */
  public TransferPlan(
      List<PullSegment> segments,
      List<String> fallback,
      List<ConvertSource> converts,
      List<FullPullSource> fullPulls,
      List<String> unboundedSources,
      long exactDescriptorCount,
      long exactBytes,
      Map<String, String> fallbackReasons) {
    this(
        segments,
        fallback,
        converts,
        fullPulls,
        unboundedSources,
        exactDescriptorCount,
        exactBytes,
        fallbackReasons,
        List.of(),
        BoundingMode.MODELEXPRESS,
        List.of());
  }

  public TransferPlan {
    java.util.Objects.requireNonNull(bounding, "bounding");
    // A compact list is immutable: keep it rather than materializing every segment.
    segments = segments instanceof CompactSegments ? segments : List.copyOf(segments);
    fallback = List.copyOf(fallback);
    converts = List.copyOf(converts);
    fullPulls = List.copyOf(fullPulls);
    unboundedSources = List.copyOf(unboundedSources);
    fallbackReasons = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(fallbackReasons));
    stagedShards = List.copyOf(stagedShards);
    boundingDecisions = List.copyOf(boundingDecisions);
  }

  /** The decision recorded for {@code source}, or null (ModelExpress mode records none). */
  public BoundingDecision decision(String source) {
    for (BoundingDecision d : boundingDecisions) {
      if (d.source().equals(source)) {
        return d;
      }
    }
    return null;
  }

  /** Exact ++ convert ++ full-pull ++ staged-shard segments. */
  public List<PullSegment> allSegments() {
    List<PullSegment> all = new ArrayList<>(segments);
    converts.forEach(c -> all.addAll(c.segments()));
    fullPulls.forEach(f -> all.addAll(f.segments()));
    stagedShards.forEach(s -> all.add(s.segment()));
    return all;
  }

  public long descriptorCount() {
    long n = segments.size();
    for (ConvertSource c : converts) {
      n += c.segments().size();
    }
    for (FullPullSource f : fullPulls) {
      n += f.segments().size();
    }
    return n + stagedShards.size();
  }

  public long bytesPlanned() {
    long n = segments instanceof CompactSegments list ? list.totalBytes() : sum(segments);
    for (ConvertSource c : converts) {
      n += sum(c.segments());
    }
    for (FullPullSource f : fullPulls) {
      n += sum(f.segments());
    }
    for (StagedShard s : stagedShards) {
      n += s.segment().nbytes();
    }
    return n;
  }

  private static long sum(List<PullSegment> segments) {
    long n = 0;
    for (PullSegment s : segments) {
      n += s.nbytes();
    }
    return n;
  }

  /** Every session any segment reads from, in first-seen order. */
  public Set<String> sessions() {
    Set<String> s = new LinkedHashSet<>();
    for (PullSegment seg : allSegments()) {
      s.add(seg.session());
    }
    return s;
  }

  public long descriptorSavings() {
    return Math.max(0, exactDescriptorCount - descriptorCount());
  }

  public long extraWireBytes() {
    return Math.max(0, bytesPlanned() - exactBytes);
  }
}
