package dev.mx.refit.verify;

import dev.mx.refit.stage.LandedWork;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * The digest work of one read: the pieces of regions it lands, each folded into its region's
 * accumulator. As the read's {@link dev.mx.api.transport.LandingFold} it copies the read itself,
 * digesting each piece in the same pass ({@link dev.mx.api.digest.DigestParts#copyAndAdd});
 * otherwise each piece is digested from the landed memory afterwards, on a worker.
 */
final class ReadLanding implements LandedWork {

  /**
   * One piece: {@code landed} holds it, at {@code inRead} of the read and {@code regionByte} of its
   * region.
   */
  record PieceAt(LandingDigest digest, long inRead, long regionByte, MemorySegment landed) {
    long length() {
      return landed.byteSize();
    }
  }

  private final List<PieceAt> pieces = new ArrayList<>();

  /** Regions whose last byte a fold added: compared after the read returns, not inside the copy. */
  private final List<LandingDigest> completedInFold = new ArrayList<>();

  /** Whether a fold may run: pieces disjoint and inside the read (checked at {@link #seal}). */
  private boolean foldable = true;

  private volatile boolean folded;

  void add(PieceAt piece) {
    pieces.add(piece);
  }

  /** Unlands the read for the next refit (its plan renews the accumulators). */
  void reset() {
    completedInFold.clear();
    folded = false;
  }

  /** Orders the pieces; a read whose pieces overlap is never folded (they digest one by one). */
  void seal(long readBytes) {
    pieces.sort(Comparator.comparingLong(PieceAt::inRead));
    long until = 0;
    for (PieceAt p : pieces) {
      if (p.inRead() < until || p.inRead() + p.length() > readBytes) {
        foldable = false;
      }
      until = Math.max(until, p.inRead() + p.length());
    }
  }

  /**
   * Copies the read, digesting its pieces as they pass and the bytes between them plainly. A second
   * landing of the same read (a read issued twice, or a policy's retry) brings the same leased
   * bytes to the same place: it is a plain copy, already digested.
   */
  @Override
  public void copy(MemorySegment src, MemorySegment dst) {
    if (folded || !foldable) {
      MemorySegment.copy(src, 0, dst, 0, src.byteSize());
      return;
    }
    long at = 0;
    for (PieceAt p : pieces) {
      if (p.inRead() > at) {
        MemorySegment.copy(src, at, dst, at, p.inRead() - at);
      }
      long n = p.length();
      MemorySegment from = src.asSlice(p.inRead(), n);
      if (p.digest().parts().copyAndAdd(p.regionByte(), from, dst.asSlice(p.inRead(), n))) {
        completedInFold.add(p.digest());
      }
      at = p.inRead() + n;
    }
    if (at < src.byteSize()) {
      MemorySegment.copy(src, at, dst, at, src.byteSize() - at);
    }
    folded = true;
  }

  @Override
  public boolean folded() {
    return folded;
  }

  @Override
  public Left afterLanding() {
    if (folded) {
      if (completedInFold.isEmpty()) {
        return Left.NONE;
      }
      List<LandingDigest> done = List.copyOf(completedInFold);
      List<Runnable> after = new ArrayList<>();
      for (LandingDigest d : done) {
        if (d.afterVerified() != null) {
          after.add(d.afterVerified());
        }
      }
      return new Left(List.of(() -> done.forEach(LandingDigest::check)), after);
    }
    List<Runnable> tasks = new ArrayList<>(pieces.size());
    for (PieceAt p : pieces) {
      tasks.add(
          () -> {
            if (p.digest().parts().add(p.regionByte(), p.landed())) {
              p.digest().check();
              if (p.digest().afterVerified() != null) {
                p.digest().afterVerified().run();
              }
            }
          });
    }
    return new Left(List.of(), tasks);
  }
}
