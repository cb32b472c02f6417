package dev.mx.transport.nixl;

import java.lang.foreign.MemorySegment;

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
}
