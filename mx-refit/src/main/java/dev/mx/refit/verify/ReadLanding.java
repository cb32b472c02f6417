package dev.mx.refit.verify;

import dev.mx.refit.stage.LandedWork;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * The digest work of one read: the pieces of checked shards (or tiles) it lands, each folded into
 * its check's accumulator. As the read's {@link dev.mx.api.transport.LandingFold} it copies the
 * read itself, digesting each piece in the same pass ({@link
 * dev.mx.api.digest.DigestParts#copyAndAdd}); otherwise each piece is digested from the landed
 * memory afterwards, as a task of its own.
 */
final class ReadLanding implements LandedWork {

  /**
   * One piece: {@code length} bytes at {@code inRead} of the read, at {@code shardByte} of its
   * check.
   */
  record PieceAt(
      ShardVerifier.Accumulating check, long inRead, long shardByte, MemorySegment landed) {
    long length() {
      return landed.byteSize();
    }
  }

  private final List<PieceAt> pieces = new ArrayList<>();

  /** Checks whose last byte a fold added: compared after the read returns, not inside the copy. */
  private final List<ShardVerifier.Accumulating> completedInFold = new ArrayList<>();

  /**
   * Whether a fold may run: pieces sorted and disjoint inside the read (checked at {@link #seal}).
   */
  private boolean foldable = true;

  private volatile boolean folded;

  void add(PieceAt piece) {
    pieces.add(piece);
  }

  /**
   * Orders the pieces; a read whose pieces overlap is never folded (its pieces digest one by one).
   */
  ReadLanding seal(long readBytes) {
    pieces.sort(Comparator.comparingLong(PieceAt::inRead));
    long until = 0;
    for (PieceAt p : pieces) {
      if (p.inRead() < Math.max(0, until) || p.inRead() + p.length() > readBytes) {
        foldable = false;
      }
      until = Math.max(until, p.inRead() + p.length());
    }
    return this;
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
      if (p.check()
          .parts()
          .copyAndAdd(p.shardByte(), src.asSlice(p.inRead(), n), dst.asSlice(p.inRead(), n))) {
        completedInFold.add(p.check());
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
  public List<Runnable> afterLanding() {
    if (folded) {
      List<ShardVerifier.Accumulating> done = List.copyOf(completedInFold);
      return done.isEmpty()
          ? List.of()
          : List.of(() -> done.forEach(ShardVerifier.Accumulating::compare));
    }
    List<Runnable> tasks = new ArrayList<>(pieces.size());
    for (PieceAt p : pieces) {
      tasks.add(
          () -> {
            if (p.check().parts().add(p.shardByte(), p.landed())) {
              p.check().compare();
            }
          });
    }
    return tasks;
  }
}
