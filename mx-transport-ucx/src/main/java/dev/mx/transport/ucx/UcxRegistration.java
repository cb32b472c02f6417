package dev.mx.transport.ucx;

import dev.mx.api.transport.MemoryRegistration;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Map;
import org.openucx.jucx.ucp.UcpMemory;

/**
 * A registered region: deregistered (directory slot cleared first, then UCX's mapping) on close.
 */
final class UcxRegistration implements MemoryRegistration {
  private final UcxTransport owner;
  final int id;
  final MemorySegment segment;
  final UcpMemory memory;
  final byte[] rkey;
  final int slot;
  final long cookie;

  /** For memory UCX allocated: the arena its segment is bound to. */
  final Arena arena;

  private boolean released; // guarded by the transport's registry lock

  UcxRegistration(
      UcxTransport transport,
      int id,
      MemorySegment segment,
      UcpMemory memory,
      byte[] rkey,
      int slot,
      long cookie,
      Arena owner) {
    this.owner = transport;
    this.id = id;
    this.segment = segment;
    this.memory = memory;
    this.rkey = rkey;
    this.slot = slot;
    this.cookie = cookie;
    this.arena = owner;
  }

  @Override
  public MemorySegment segment() {
    return segment;
  }

  @Override
  public void close() {
    synchronized (owner.registry) {
      if (released) {
        return;
      }
      owner.registrations.remove(id);
      Map<Integer, UcxRegistration> remaining = Map.copyOf(owner.registrations);
      owner.local =
          new UcxTransport.LocalRegions(UcxTransport.tableOf(remaining, -1, null), remaining);
      release();
    }
  }

  /**
   * Clears the directory slot, then drops UCX's registration; memory UCX allocated is made
   * unreachable from Java at once but freed only after {@link UcxTransport#FREE_GRACE_NANOS} (see
   * {@link UcxTransport#quarantine}). The caller holds the transport's registry lock.
   */
  void release() {
    if (released) {
      return;
    }
    released = true;
    owner.directory.release(slot);
    if (arena == null) {
      owner.unmap(memory);
    } else {
      arena.close();
      owner.quarantine.add(
          new UcxTransport.Quarantined(memory, System.nanoTime() + UcxTransport.FREE_GRACE_NANOS));
    }
    owner.freeQuarantined(false);
  }
}
