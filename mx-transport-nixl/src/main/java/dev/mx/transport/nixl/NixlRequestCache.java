package dev.mx.transport.nixl;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One agent's prepared READ requests by their exact descriptors, least recently used first, and the
 * requests NIXL would not release yet (retried at close). Every method is called holding the
 * agent's lock; the cache gets the library and agent it frees requests with, nothing else.
 */
final class NixlRequestCache {
  private static final Logger LOG = LoggerFactory.getLogger(NixlRequestCache.class);

  private final NixlLibrary lib;
  private final MemorySegment agent;
  private final String session;
  private final int capacity;
  private final LinkedHashMap<NixlRequestKey, NixlRequest> byKey =
      new LinkedHashMap<>(16, 0.75f, true);
  private final List<NixlRequest> unreleased = new ArrayList<>();

  /**
   * The cache of agent {@code agent} of endpoint {@code session}, holding up to {@code capacity}.
   */
  NixlRequestCache(NixlLibrary lib, MemorySegment agent, String session, int capacity) {
    this.lib = lib;
    this.agent = agent;
    this.session = session;
    this.capacity = capacity;
  }

  /** The cached request for {@code key}, or null. */
  NixlRequest get(NixlRequestKey key) {
    return byKey.get(key);
  }

  /** Keeps {@code p} for reuse unless its key already has one (or caching is off). */
  void offer(NixlRequest p) {
    if (!byKey.containsKey(p.key) && capacity > 0) {
      p.cached = true;
      byKey.put(p.key, p);
      evictBeyondCapacity();
    }
  }

  int size() {
    return byKey.size();
  }

  /** Drops entries beyond the capacity, least recently used first. */
  private void evictBeyondCapacity() {
    Iterator<NixlRequest> it = byKey.values().iterator();
    while (byKey.size() > capacity && it.hasNext()) {
      drop(it.next(), it);
    }
  }

  /** Drops the entries {@code which} selects; entries in use are freed when their batch ends. */
  void evict(Predicate<NixlRequest> which) {
    Iterator<NixlRequest> it = byKey.values().iterator();
    while (it.hasNext()) {
      NixlRequest p = it.next();
      if (which.test(p)) {
        drop(p, it);
      }
    }
  }

  private void drop(NixlRequest p, Iterator<NixlRequest> at) {
    at.remove();
    p.cached = false;
    if (!p.inUse) {
      free(p);
    }
  }

  /** Takes a request out of the cache and frees it (after a failure: NIXL's state is unknown). */
  void discard(NixlRequest p) {
    if (p.cached) {
      byKey.remove(p.key, p);
      p.cached = false;
    }
    p.inUse = false;
    free(p);
  }

  /**
   * Releases (aborting it if active) and destroys the request, then its prepared lists, in that
   * order. A request NIXL will not release yet is kept for a retry at close.
   */
  void free(NixlRequest p) {
    if (p.req != null) {
      int st = lib.releaseXferReq(agent, p.req);
      if (st != NixlStatus.SUCCESS) {
        LOG.warn(
            "nixl transport: agent '{}' could not release a request to agent '{}' ({}); retrying at close",
            session,
            p.key.agentName,
            NixlStatus.describe(st));
        if (!unreleased.contains(p)) {
          unreleased.add(p);
        }
        return;
      }
      unreleased.remove(p);
      st = lib.destroyXferReq(p.req);
      if (st != NixlStatus.SUCCESS) {
        LOG.warn(
            "nixl transport: destroy_xfer_req after release returned {}", NixlStatus.describe(st));
      }
      p.req = null;
    }
    if (p.remote != null) {
      lib.releaseXferDlistHandle(agent, p.remote);
      p.remote = null;
    }
    if (p.local != null) {
      lib.releaseXferDlistHandle(agent, p.local);
      p.local = null;
    }
  }

  /**
   * Frees every cached request, then retries those NIXL would not release (the endpoint's close);
   * returns how many it still would not.
   */
  int freeAll() {
    for (NixlRequest p : List.copyOf(byKey.values())) {
      p.cached = false;
      free(p);
    }
    byKey.clear();
    for (NixlRequest p : List.copyOf(unreleased)) {
      free(p);
    }
    return unreleased.size();
  }
}
