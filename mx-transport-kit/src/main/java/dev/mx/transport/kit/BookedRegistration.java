package dev.mx.transport.kit;

import dev.mx.api.annotation.Internal;
import dev.mx.api.transport.MemoryKind;
import dev.mx.api.transport.MemoryRegistration;
import java.lang.foreign.MemorySegment;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The part every backend's registration shares: its id in the backend's {@link RegionBook}, the
 * registered memory and its kind, and a close that runs once: it takes the registration out of the
 * book (batches prepared from then on no longer resolve it), then runs {@link #release()}, where
 * the backend frees what it holds (a native mapping, a directory slot, a file).
 *
 * <p>An endpoint's own close releases every registration with {@link #releaseWithEndpoint()} and
 * clears the book once, instead of removing them one by one.
 */
@Internal
public abstract class BookedRegistration implements MemoryRegistration {
  private final RegionBook<?> book;
  private final int id;
  private final MemorySegment segment;
  private final MemoryKind kind;
  private final AtomicBoolean released = new AtomicBoolean();

  /** Held while closing (null: none). */
  private final Object closeLock;

  /**
   * Registration {@code id} of {@code book}: {@code segment}, memory of {@code kind}; closing holds
   * {@code closeLock} (the backend's registry lock, so a release never interleaves with a
   * registration), or nothing when it is null.
   */
  protected BookedRegistration(
      RegionBook<?> book, int id, MemorySegment segment, MemoryKind kind, Object closeLock) {
    this.book = Objects.requireNonNull(book, "book");
    this.id = id;
    this.segment = Objects.requireNonNull(segment, "segment");
    this.kind = Objects.requireNonNull(kind, "kind");
    this.closeLock = closeLock;
  }

  /** Registration {@code id} of {@code book}: {@code segment}, memory of {@code kind}. */
  protected BookedRegistration(RegionBook<?> book, int id, MemorySegment segment, MemoryKind kind) {
    this(book, id, segment, kind, null);
  }

  /** Registration {@code id} of {@code book}: host memory {@code segment}. */
  protected BookedRegistration(RegionBook<?> book, int id, MemorySegment segment) {
    this(book, id, segment, MemoryKind.HOST);
  }

  /** The id the book gave it (its region id in the book's tables). */
  public final int id() {
    return id;
  }

  @Override
  public final MemorySegment segment() {
    return segment;
  }

  @Override
  public final MemoryKind memoryKind() {
    return kind;
  }

  /** Whether it was closed or released with its endpoint. */
  public final boolean isReleased() {
    return released.get();
  }

  /**
   * Takes it out of the book, then releases it (holding the close lock); later calls do nothing.
   */
  @Override
  public void close() {
    if (closeLock == null) {
      closeOnce();
      return;
    }
    synchronized (closeLock) {
      closeOnce();
    }
  }

  private void closeOnce() {
    if (released.compareAndSet(false, true)) {
      book.remove(id);
      release();
    }
  }

  /**
   * Releases it without touching the book, for the endpoint's close (which clears the book); does
   * nothing when it was closed already.
   */
  public final void releaseWithEndpoint() {
    if (released.compareAndSet(false, true)) {
      release();
    }
  }

  /** Frees what the backend holds for this region; runs at most once. Nothing by default. */
  protected void release() {}

  @Override
  public String toString() {
    return getClass().getSimpleName()
        + "[#"
        + id
        + " 0x"
        + Long.toHexString(segment.address())
        + "+"
        + segment.byteSize()
        + (kind.equals(MemoryKind.HOST) ? "" : " " + kind)
        + (isReleased() ? ", released]" : "]");
  }
}
