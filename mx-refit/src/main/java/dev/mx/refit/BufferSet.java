package dev.mx.refit;

import dev.mx.refit.stage.DeltaState;
import dev.mx.refit.stage.Descriptors;
import dev.mx.refit.stage.LocalCopies;
import dev.mx.refit.verify.ShardVerifier;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Map;

/**
 * One set of receive buffers with everything compiled against it at prepare: its local copies, its
 * verifier, what it holds for delta refits, and its descriptor count and bytes. Only the descriptor
 * cache changes after prepare.
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
