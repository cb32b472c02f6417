package dev.mx.refit;

import dev.mx.api.digest.DigestProvider;
import dev.mx.refit.stage.DeltaState;
import dev.mx.refit.stage.Descriptors;
import dev.mx.refit.stage.LocalCopies;
import dev.mx.refit.stage.StagedWork;
import dev.mx.refit.verify.LandingPlan;
import dev.mx.refit.verify.ShardVerifier;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * One set of receive buffers with everything compiled against it at prepare: its local copies, its
 * verifier, what it holds for delta refits, and its descriptor count and bytes. Only the descriptor
 * cache and the landing plans change after prepare.
 */
final class BufferSet {
  final Map<String, MemorySegment> params;
  final LocalCopies local;
  final ShardVerifier verifier;

  /** What these buffers hold, for delta refits. */
  final DeltaState delta;

  final long descriptorCount;
  final long bytes;

  /** The descriptors of the last full refit into this set, reused while the plan holds. */
  List<Descriptors> cached;

  /** Each wave's landing plan, kept while its reads, kept sources and digest provider hold. */
  final Map<Integer, WaveLanding> landings = new java.util.HashMap<>();

  /**
   * Which digests a wave's reads assemble where they land ({@code plan}), and what is left for
   * per-peer work: the staged shards not verified on their reads, the verifier's checks digested
   * whole. Built for {@code reads} (the same descriptors object), the sources {@code kept} by a
   * delta step, a digest provider and whether the wave verifies checks.
   */
  record WaveLanding(
      Descriptors reads,
      Set<String> kept,
      DigestProvider provider,
      boolean checks,
      LandingPlan plan,
      List<StagedWork> unfusedStaged,
      int[] wholeChecks) {

    boolean holdsFor(
        Descriptors otherReads, Set<String> otherKept, DigestProvider other, boolean withChecks) {
      return reads == otherReads
          && provider == other
          && checks == withChecks
          && kept.equals(otherKept);
    }
  }

  BufferSet(
      Map<String, MemorySegment> params,
      LocalCopies local,
      ShardVerifier verifier,
      DeltaState delta,
      long descriptorCount,
      long bytes) {
    this.params = params;
    this.local = local;
    this.verifier = verifier;
    this.delta = delta;
    this.descriptorCount = descriptorCount;
    this.bytes = bytes;
  }
}
