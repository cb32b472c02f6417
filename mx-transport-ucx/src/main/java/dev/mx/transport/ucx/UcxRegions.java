package dev.mx.transport.ucx;

import dev.mx.api.error.TransportException;
import dev.mx.api.transport.MemoryRegistration;
import dev.mx.transport.kit.RegionBook;
import dev.mx.transport.kit.RegionDirectory;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.ReentrantLock;
import org.openucx.jucx.ucp.UcpContext;
import org.openucx.jucx.ucp.UcpMemMapParams;
import org.openucx.jucx.ucp.UcpMemory;

/**
 * An endpoint's registered regions: their UCX mappings, the region directory a receiver probes, the
 * book the serving side answers from, and the quarantine of freed allocations. Kept apart from the
 * endpoint so that registering and publishing have one owner, with the UCX context, the worker lock
 * and the endpoint's open check handed in.
 */
final class UcxRegions {
  private final String session;
  private final UcpContext context;
  private final ReentrantLock workerLock;

  /** Throws when the endpoint was closed. */
  private final Runnable ensureOpen;

  private final RegionDirectory directory;
  private final UcpMemory directoryMemory;

  /** The arena the directory's segment is bound to, closed before UCX frees the memory. */
  private final Arena directoryArena;

  private final byte[] directoryRkey;

  /**
   * Serializes registering, deregistering and publishing the registrations (with their directory
   * slots and UCX mappings); taken before the worker lock, never after it.
   */
  private final Object registry = new Object();

  private final RegionBook<UcxRegistration> book;

  /** Allocations whose registrations closed, freed after a grace (guarded by the registry). */
  private final UcxQuarantine quarantine = new UcxQuarantine(this::unmap);

  /**
   * The regions of endpoint {@code session}, with a directory of {@code maxRegions} slots in memory
   * UCX allocates (on one host a receiver's probe is then a plain copy). What this opens is added
   * to {@code opened}, for the endpoint to close in reverse if it does not open.
   */
  @SuppressWarnings("MustBeClosedChecker") // the directory arena is a field, closed by close()
  UcxRegions(
      String session,
      UcpContext context,
      ReentrantLock workerLock,
      int maxRegions,
      Runnable ensureOpen,
      List<AutoCloseable> opened) {
    this.session = session;
    this.context = context;
    this.workerLock = workerLock;
    this.ensureOpen = ensureOpen;
    this.book = new RegionBook<>("ucx", session);
    long dirBytes = RegionDirectory.bytesFor(maxRegions);
    UcpMemory dirMem = context.memoryMap(new UcpMemMapParams().allocate().setLength(dirBytes));
    opened.add(dirMem::deregister);
    Arena dirArena = Arena.ofShared();
    opened.add(dirArena);
    this.directory =
        new RegionDirectory(
            MemorySegment.ofAddress(dirMem.getAddress()).reinterpret(dirBytes, dirArena, null));
    this.directoryMemory = dirMem;
    this.directoryArena = dirArena;
    this.directoryRkey = bytes(dirMem.getRemoteKeyBuffer());
  }

  /** The registry lock; a caller taking the worker lock as well takes this one first. */
  Object lock() {
    return registry;
  }

  /** The live registrations, as the serving side and the read checks see them. */
  RegionBook.Snapshot<UcxRegistration> snapshot() {
    return book.snapshot();
  }

  int size() {
    return book.size();
  }

  /** Registers {@code region} in place. */
  MemoryRegistration register(MemorySegment region) {
    return registerRegion(region, null, null);
  }

  /**
   * Memory UCX allocates and registers (see the endpoint's {@code allocate}), bound to an arena the
   * registration closes.
   */
  @SuppressWarnings(
      "MustBeClosedChecker") // the registration owns the arena; closing it closes the arena
  MemoryRegistration allocate(long bytes) {
    UcpMemory memory;
    workerLock.lock();
    try {
      ensureOpen.run();
      memory = context.memoryMap(new UcpMemMapParams().allocate().setLength(bytes));
    } catch (RuntimeException e) {
      throw failed("allocating " + bytes + " bytes", e);
    } finally {
      workerLock.unlock();
    }
    Arena owner = Arena.ofShared();
    try {
      return registerRegion(
          MemorySegment.ofAddress(memory.getAddress()).reinterpret(bytes, owner, null),
          memory,
          owner);
    } catch (RuntimeException | Error e) {
      owner.close();
      unmap(memory);
      throw e;
    }
  }

  /** The error for a UCX call of this endpoint ({@code what}) that failed with {@code e}. */
  private TransportException failed(String what, RuntimeException e) {
    return new TransportException(
        null,
        "ucx transport: " + what + " on endpoint '" + session + "' failed: " + e.getMessage(),
        e);
  }

  /**
   * Registers a region: maps it with UCX unless {@code mapped} already is its mapping, claims a
   * directory slot, and publishes it in the local table. {@code owner}, when given, is closed on
   * deregistration.
   */
  private MemoryRegistration registerRegion(MemorySegment region, UcpMemory mapped, Arena owner) {
    synchronized (registry) {
      ensureOpen.run();
      quarantine.free(false);
      return book.add(region, id -> map(id, region, mapped, owner));
    }
  }

  /** The registration {@code id} of {@code region}: its UCX mapping, rkey and directory slot. */
  private UcxRegistration map(int id, MemorySegment region, UcpMemory mapped, Arena owner) {
    UcpMemory memory;
    byte[] rkey;
    workerLock.lock();
    try {
      memory =
          mapped != null
              ? mapped
              : context.memoryMap(
                  new UcpMemMapParams().setAddress(region.address()).setLength(region.byteSize()));
      try {
        rkey = bytes(memory.getRemoteKeyBuffer());
      } catch (RuntimeException e) {
        if (mapped == null) {
          memory.deregister();
        }
        throw e;
      }
    } catch (RuntimeException e) {
      throw failed("registering " + describe(region.address(), region.byteSize()), e);
    } finally {
      workerLock.unlock();
    }
    long cookie = RegionDirectory.newCookie();
    int slot = directory.claim(cookie);
    if (slot < 0) {
      if (mapped == null) {
        unmap(memory);
      }
      throw new TransportException(
          null,
          "ucx transport: endpoint '"
              + session
              + "' already has "
              + directory.capacity()
              + " regions registered; close some or raise "
              + UcxOptions.MAX_REGIONS);
    }
    return new UcxRegistration(
        book, id, region, memory, rkey, slot, cookie, owner, registry, this::release);
  }

  /**
   * Clears the directory slot, then drops UCX's registration; memory UCX allocated is made
   * unreachable from Java at once but freed only after {@link UcxQuarantine#FREE_GRACE_NANOS}. The
   * registry lock is held.
   */
  private void release(UcxRegistration r) {
    directory.release(r.slot);
    if (r.arena == null) {
      unmap(r.memory);
    } else {
      r.arena.close();
      quarantine.add(r.memory);
    }
    quarantine.free(false);
  }

  /**
   * What a receiver needs to read the regions registered now from the worker at {@code address}.
   */
  UcxPeerMetadata metadata(byte[] workerAddress) {
    List<UcxPeerMetadata.Region> regions = new ArrayList<>();
    synchronized (registry) {
      for (UcxRegistration r : book.all()) {
        regions.add(
            new UcxPeerMetadata.Region(
                r.segment().address(), r.segment().byteSize(), r.slot, r.cookie, r.rkey));
      }
    }
    return new UcxPeerMetadata(
        workerAddress, directory.segment().address(), directory.capacity(), directoryRkey, regions);
  }

  /**
   * Deregisters every region, frees the quarantine, then the directory, adding what failed to
   * {@code failures}; returns whether all memory was released (the worker may be destroyed only
   * then). The registry and worker locks are held.
   */
  boolean close(List<RuntimeException> failures) {
    boolean memoryReleased = true;
    for (UcxRegistration r : book.all()) {
      try {
        r.releaseWithEndpoint();
      } catch (RuntimeException e) {
        memoryReleased = false;
        failures.add(
            new TransportException(
                null,
                "deregistering "
                    + describe(r.segment().address(), r.segment().byteSize())
                    + " failed: "
                    + e.getMessage(),
                e));
      }
    }
    book.clear();
    try {
      quarantine.free(true);
      directory.close();
      directoryArena.close();
      directoryMemory.deregister();
    } catch (RuntimeException e) {
      memoryReleased = false;
      failures.add(e);
    }
    return memoryReleased;
  }

  /**
   * Drops UCX's registration of {@code memory} (freeing it if UCX allocated it), holding the worker
   * lock.
   */
  private void unmap(UcpMemory memory) {
    workerLock.lock();
    try {
      memory.deregister();
    } finally {
      workerLock.unlock();
    }
  }

  /** The bytes of a buffer jucx returned (a packed key, a worker address). */
  static byte[] bytes(ByteBuffer b) {
    ByteBuffer d = b.duplicate();
    d.clear();
    byte[] out = new byte[d.remaining()];
    d.get(out);
    return out;
  }

  /** A region as messages name it. */
  static String describe(long base, long length) {
    return "0x" + Long.toHexString(base) + "+" + length;
  }
}
