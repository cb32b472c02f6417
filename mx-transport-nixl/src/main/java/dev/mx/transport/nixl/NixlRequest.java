package dev.mx.transport.nixl;

import dev.mx.api.error.TransportException;
import dev.mx.api.transport.ReadDescriptor;
import java.lang.foreign.MemorySegment;
import java.util.List;

/** A READ request and the prepared lists it was made from. Fields guarded by the agent lock. */
final class NixlRequest {
  final NixlRequestKey key;
  MemorySegment local;
  MemorySegment remote;
  MemorySegment req;

  /** A batch is using it (posted or about to be). */
  boolean inUse;

  /** It sits in the cache; otherwise it is freed once its batch finished. */
  boolean cached;

  NixlRequest(NixlRequestKey key, MemorySegment local, MemorySegment remote, MemorySegment req) {
    this.key = key;
    this.local = local;
    this.remote = remote;
    this.req = req;
  }

  /** A failed source check is narrowed down this many descriptors at a time before one by one. */
  private static final int CHECK_CHUNK = 1024;

  /**
   * Checks the sources against the peer's metadata and makes the request of {@code key} with agent
   * {@code agent}. Agent lock held.
   */
  static NixlRequest build(
      NixlLibrary lib,
      MemorySegment agent,
      NixlRequestKey key,
      String session,
      List<ReadDescriptor> group,
      boolean self) {
    int n = key.len.length;
    MemorySegment remoteList = MemorySegment.NULL;
    MemorySegment localList = MemorySegment.NULL;
    MemorySegment lh = MemorySegment.NULL;
    MemorySegment rh = MemorySegment.NULL;
    try {
      // The peer's memory is taken to be of the same type and device as ours (VRAM to VRAM, as
      // ModelExpress
      // refits run); check_remote_md refuses descriptors that do not match what the peer
      // registered.
      remoteList = lib.xferDlist(key.memType, key.devId, key.src, key.len, 0, n);
      if (!self) {
        int st = lib.checkRemoteMd(agent, key.agentName, remoteList);
        if (st != NixlStatus.SUCCESS) {
          throw outsidePublished(lib, agent, key, session, group, st);
        }
      }
      localList = lib.xferDlist(key.memType, key.devId, key.dst, key.len, 0, n);
      lh = lib.prepXferDlist(agent, "", localList); // "": this agent as initiator (NIXL_INIT_AGENT)
      rh = lib.prepXferDlist(agent, key.agentName, remoteList);
      MemorySegment req = lib.makeReadReq(agent, lh, rh, n);
      return new NixlRequest(key, lh, rh, req);
    } catch (NixlStatusException e) {
      if (!rh.equals(MemorySegment.NULL)) {
        lib.releaseXferDlistHandle(agent, rh);
      }
      if (!lh.equals(MemorySegment.NULL)) {
        lib.releaseXferDlistHandle(agent, lh);
      }
      throw new TransportException(
          session,
          "nixl transport: preparing "
              + n
              + " reads from peer '"
              + session
              + "' (NIXL agent '"
              + key.agentName
              + "') failed: "
              + e.getMessage()
              + "; nothing in this batch was read",
          e);
    } finally {
      if (!localList.equals(MemorySegment.NULL)) {
        lib.destroyXferDlist(localList);
      }
      if (!remoteList.equals(MemorySegment.NULL)) {
        lib.destroyXferDlist(remoteList);
      }
    }
  }

  /**
   * The error for sources the peer's metadata does not cover, naming the first descriptor at fault.
   */
  private static TransportException outsidePublished(
      NixlLibrary lib,
      MemorySegment agent,
      NixlRequestKey key,
      String session,
      List<ReadDescriptor> group,
      int status) {
    int n = key.len.length;
    int culprit = -1;
    for (int from = 0; from < n && culprit < 0; from += CHECK_CHUNK) {
      int to = Math.min(n, from + CHECK_CHUNK);
      if (check(lib, agent, key, from, to) == NixlStatus.SUCCESS) {
        continue;
      }
      for (int i = from; i < to && culprit < 0; i++) {
        if (check(lib, agent, key, i, i + 1) != NixlStatus.SUCCESS) {
          culprit = i;
        }
      }
    }
    String which =
        culprit < 0
            ? "some descriptor of " + n
            : "descriptor #" + culprit + " " + group.get(culprit);
    return new TransportException(
        session,
        "nixl transport: "
            + which
            + " reads outside every region peer '"
            + session
            + "' published (check_remote_md against NIXL agent '"
            + key.agentName
            + "' returned "
            + NixlStatus.describe(status)
            + "); nothing in this batch was read");
  }

  private static int check(
      NixlLibrary lib, MemorySegment agent, NixlRequestKey key, int from, int to) {
    MemorySegment l = lib.xferDlist(key.memType, key.devId, key.src, key.len, from, to);
    try {
      return lib.checkRemoteMd(agent, key.agentName, l);
    } finally {
      lib.destroyXferDlist(l);
    }
  }
}
