package dev.mx.transport.ucx;

import java.util.ArrayDeque;
import java.util.function.Consumer;
import org.openucx.jucx.ucp.UcpMemory;

/**
 * Allocations whose registrations closed, oldest first. A reply to a read a receiver's probe passed
 * just before the close may still be on its way out of it (or a rendezvous reading it): freeing at
 * once could crash this process. They are freed after a grace period (on a later registration
 * change) or when the endpoint closes. Guarded by the endpoint's registry lock.
 */
final class UcxQuarantine {
  /** How long memory UCX allocated stays mapped after its registration closed. */
  static final long FREE_GRACE_NANOS = 5_000_000_000L;

  private record Held(UcpMemory memory, long freeAfterNanos) {}

  private final ArrayDeque<Held> held = new ArrayDeque<>();
  private final Consumer<UcpMemory> unmap;

  /** A quarantine that frees memory with {@code unmap}. */
  UcxQuarantine(Consumer<UcpMemory> unmap) {
    this.unmap = unmap;
  }

  /** Holds {@code memory} for the grace period. */
  void add(UcpMemory memory) {
    held.add(new Held(memory, System.nanoTime() + FREE_GRACE_NANOS));
  }

  /** Frees what has served its grace period (everything when {@code all}). */
  void free(boolean all) {
    long now = System.nanoTime();
    while (!held.isEmpty() && (all || now - held.peekFirst().freeAfterNanos() >= 0)) {
      unmap.accept(held.pollFirst().memory());
    }
  }
}
