package dev.mx.api.transport;

import dev.mx.api.error.TransportException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * {@link Transport#allocate}'s default: memory from a shared arena, registered, freed with the
 * registration.
 */
final class ArenaAllocation implements MemoryRegistration {
  private final Arena arena;
  private final MemoryRegistration registration;
  private final AtomicBoolean closed = new AtomicBoolean();

  private ArenaAllocation(Arena arena, MemoryRegistration registration) {
    this.arena = arena;
    this.registration = registration;
  }

  @SuppressWarnings("MustBeClosedChecker") // the returned allocation owns the arena and closes it
  static MemoryRegistration allocateAndRegister(Transport transport, long bytes) {
    if (bytes <= 0) {
      throw new TransportException(
          null, transport.name() + " transport cannot allocate " + bytes + " bytes");
    }
    Arena arena = Arena.ofShared();
    try {
      return new ArenaAllocation(arena, transport.register(arena.allocate(bytes, 4096)));
    } catch (RuntimeException | Error e) {
      arena.close();
      throw e;
    }
  }

  @Override
  public MemorySegment segment() {
    return registration.segment();
  }

  @Override
  public void close() {
    if (closed.compareAndSet(false, true)) {
      try {
        registration.close();
      } finally {
        arena.close();
      }
    }
  }
}
