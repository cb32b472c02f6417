package dev.mx.transport.nixl;

import java.util.Arrays;
import java.util.Objects;

/** The exact descriptors of one peer's group: the cache key for its prepared request. */
final class NixlRequestKey {
  final String agentName;
  final long generation;
  final long[] src;
  final long[] dst;
  final long[] len;

  /** The memory both transfer lists name: DRAM on device 0, or VRAM of one device. */
  final int memType;

  final long devId;
  private final int hash;

  NixlRequestKey(
      String agentName,
      long generation,
      long[] src,
      long[] dst,
      long[] len,
      int memType,
      long devId) {
    this.agentName = agentName;
    this.generation = generation;
    this.src = src;
    this.dst = dst;
    this.len = len;
    this.memType = memType;
    this.devId = devId;
    this.hash =
        Objects.hash(
            agentName,
            generation,
            Arrays.hashCode(src),
            Arrays.hashCode(dst),
            Arrays.hashCode(len),
            memType,
            devId);
  }

  @Override
  public int hashCode() {
    return hash;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof NixlRequestKey k
        && k.hash == hash
        && k.generation == generation
        && k.agentName.equals(agentName)
        && k.memType == memType
        && k.devId == devId
        && Arrays.equals(k.len, len)
        && Arrays.equals(k.src, src)
        && Arrays.equals(k.dst, dst);
  }
}
