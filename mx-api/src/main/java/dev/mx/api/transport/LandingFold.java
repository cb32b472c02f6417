package dev.mx.api.transport;

import dev.mx.api.annotation.Experimental;
import java.lang.foreign.MemorySegment;

/**
 * What a receiver does with one read's bytes while a transport moves them with the CPU: it copies
 * them itself and folds them into their shard's digest in the same pass, so verifying a byte costs
 * no second read of memory. A transport that copies with the calling thread's CPU hands a read to
 * its fold ({@link LandingFolds#copy}); one that lets hardware or the kernel move the bytes never
 * calls it, and the receiver digests the landed bytes afterwards.
 */
@Experimental("landing folds may gain kinds of work beyond digests (casts, re-slices)")
@FunctionalInterface
public interface LandingFold {

  /**
   * Moves every byte of {@code src} into {@code dst} (both exactly the read's {@code nbytes}) and
   * folds them in. Called at most once per landing, on the thread that issued the read; must not
   * throw for the bytes' content (a mismatch is judged after the read returns).
   */
  void copy(MemorySegment src, MemorySegment dst);
}
