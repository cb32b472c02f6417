package dev.mx.api.transport;

import dev.mx.api.annotation.Experimental;
import java.lang.foreign.MemorySegment;
import java.util.Map;
import java.util.function.Supplier;

/**
 * The {@link LandingFold}s of the reads a thread is issuing, keyed by descriptor. The receiver
 * binds them around a wire policy's call ({@link #during}), so a custom or decorated policy passes
 * them on without knowing of them; a transport that copies on the calling thread looks them up once
 * per batch ({@link #current}) and moves each descriptor through {@link #copy}. Reads issued on
 * another thread see {@link #NONE}: their bytes land by plain copies and are digested afterwards.
 */
@Experimental("landing folds may gain kinds of work beyond digests (casts, re-slices)")
public final class LandingFolds {

  /** No folds: every copy is a plain one. */
  public static final LandingFolds NONE = new LandingFolds(Map.of());

  private static final ScopedValue<LandingFolds> BOUND = ScopedValue.newInstance();

  private final Map<ReadDescriptor, ? extends LandingFold> folds;

  private LandingFolds(Map<ReadDescriptor, ? extends LandingFold> folds) {
    this.folds = folds;
  }

  /** Folds for the reads in {@code folds}' keys (not copied: the caller keeps it unchanged). */
  public static LandingFolds of(Map<ReadDescriptor, ? extends LandingFold> folds) {
    return folds.isEmpty() ? NONE : new LandingFolds(folds);
  }

  /** The folds bound on this thread, or {@link #NONE}. */
  public static LandingFolds current() {
    return BOUND.isBound() ? BOUND.get() : NONE;
  }

  /**
   * Runs {@code work} (typically a wire policy's transfer) with these folds bound on this thread.
   */
  public <T> T during(Supplier<T> work) {
    return this == NONE ? work.get() : ScopedValue.where(BOUND, this).call(work::get);
  }

  /** Whether no read has a fold. */
  public boolean isEmpty() {
    return folds.isEmpty();
  }

  /**
   * Moves {@code read}'s {@code nbytes} from {@code src} at {@code srcOffset} to {@code dst} at
   * {@code dstOffset}: through the read's fold when it has one, else as a plain copy.
   */
  public void copy(
      ReadDescriptor read, MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset) {
    LandingFold fold = folds.isEmpty() ? null : folds.get(read);
    if (fold == null) {
      MemorySegment.copy(src, srcOffset, dst, dstOffset, read.nbytes());
    } else {
      fold.copy(src.asSlice(srcOffset, read.nbytes()), dst.asSlice(dstOffset, read.nbytes()));
    }
  }
}
