package dev.mx.transport.nixl;

import dev.mx.api.error.TransportException;
import dev.mx.api.transport.MemoryKind;
import dev.mx.transport.kit.BookedRegistration;
import dev.mx.transport.kit.RegionBook;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Memory registered with a NIXL agent: its registration list, kept for {@code deregister_mem}.
 * Closing drops every prepared request of the agent (their local lists may name this memory; refits
 * do not deregister midway), then deregisters. Gets the agent it needs passed in.
 */
final class NixlRegistration extends BookedRegistration {

  /**
   * The agent a registration belongs to: its library and handle, the endpoint's session (named in
   * errors), the registry lock (deregistering does not interleave with registering), the agent lock
   * (every call into the agent), and the request cache to empty.
   */
  record Agent(
      NixlLibrary lib,
      MemorySegment agent,
      String session,
      Object registry,
      ReentrantLock lock,
      NixlRequestCache cache) {}

  private final Agent agent;
  private final MemorySegment dlist;

  /** What deregister_mem returned once released (written under the agent lock). */
  int releaseStatus = NixlStatus.SUCCESS;

  private NixlRegistration(
      Agent agent,
      RegionBook<NixlRegistration> book,
      int id,
      MemorySegment segment,
      MemoryKind kind,
      MemorySegment dlist) {
    super(book, id, segment, kind);
    this.agent = agent;
    this.dlist = dlist;
  }

  /**
   * Registers {@code region} ({@code kind} memory, as NIXL's {@code memType} of device {@code
   * devId}) with the agent as registration {@code id} of {@code book}. Agent lock held.
   */
  static NixlRegistration register(
      Agent agent,
      RegionBook<NixlRegistration> book,
      int id,
      MemorySegment region,
      MemoryKind kind,
      int memType,
      long devId) {
    NixlLibrary lib = agent.lib();
    try {
      MemorySegment dlist = lib.regDlist(memType, devId, region.address(), region.byteSize());
      int st = lib.registerMem(agent.agent(), dlist);
      if (st != NixlStatus.SUCCESS) {
        lib.destroyRegDlist(dlist);
        throw new TransportException(
            null,
            "nixl transport: registering "
                + kind
                + " memory "
                + describe(region)
                + " with agent '"
                + agent.session()
                + "' failed: register_mem"
                + " returned "
                + NixlStatus.describe(st));
      }
      return new NixlRegistration(agent, book, id, region, kind, dlist);
    } catch (NixlStatusException e) {
      throw new TransportException(
          null,
          "nixl transport: registering " + describe(region) + " failed: " + e.getMessage(),
          e);
    }
  }

  @Override
  public void close() {
    synchronized (agent.registry()) {
      if (isReleased()) {
        return; // closed before, or the endpoint closed first and released it
      }
      super.close();
    }
    if (releaseStatus != NixlStatus.SUCCESS) {
      throw new TransportException(
          null,
          "nixl transport: deregistering "
              + describe(segment())
              + " from agent '"
              + agent.session()
              + "' failed: deregister_mem returned "
              + NixlStatus.describe(releaseStatus));
    }
  }

  /** Drops every prepared request, then deregisters and destroys the registration list. */
  @Override
  protected void release() {
    agent.lock().lock();
    try {
      agent.cache().evict(p -> true);
      releaseStatus = agent.lib().deregisterMem(agent.agent(), dlist);
      agent.lib().destroyRegDlist(dlist);
    } finally {
      agent.lock().unlock();
    }
  }

  private static String describe(MemorySegment s) {
    return "0x" + Long.toHexString(s.address()) + "+" + s.byteSize();
  }
}
