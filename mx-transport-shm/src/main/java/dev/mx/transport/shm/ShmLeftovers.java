package dev.mx.transport.shm;

import dev.mx.api.annotation.Stable;

/**
 * The files a killed process left in the shared-memory directory. A process that exits cleanly
 * deletes its own; a SIGKILLed one cannot, and its files hold memory until someone reclaims them.
 * Every shm transport start reclaims what dead processes left; an orchestrator that killed its
 * workers can reclaim at once instead of leaving the memory held until then.
 */
@Stable
public final class ShmLeftovers {
  private ShmLeftovers() {}

  /**
   * Deletes every shm transport file in {@link Shm#directory()} whose creator is dead (in this pid
   * namespace) and returns how many it deleted; 0 where the transport is unavailable. Never throws.
   */
  public static int reclaim() {
    return Shm.self() == null ? 0 : ShmFiles.reclaim(Shm.directory(), Shm.self());
  }
}
