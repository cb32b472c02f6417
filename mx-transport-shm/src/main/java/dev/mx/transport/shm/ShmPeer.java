package dev.mx.transport.shm;

import dev.mx.api.error.TransportException;
import dev.mx.transport.kit.RegionDirectory;
import dev.mx.transport.kit.RegionTable;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;

/**
 * A connected shm peer: its metadata, its directory and shared regions mapped read-only, and what a
 * failed read does about a peer that died (reclaim its files once it is gone). Gets the host and
 * directory it needs passed in; knows nothing of the endpoint that connected it.
 */
final class ShmPeer implements AutoCloseable {
  /**
   * How long a peer still dying after the grace is watched, off the reading thread, so its files
   * are reclaimed once it is gone (a killed JVM can take seconds to tear down on a loaded host).
   */
  private static final long EXIT_WATCH_NANOS = 60_000_000_000L;

  /** How long a failed read waits for a dying peer to be gone before reclaiming its files. */
  private static final long EXIT_GRACE_NANOS = 200_000_000L;

  final String session;
  final ShmPeerMetadata meta;
  final RegionTable regions;
  final MemorySegment[] mapped;
  final Arena arena = Arena.ofShared();
  MemorySegment directorySlots;
  private volatile boolean closed;

  /** {@code readAfterExit}: its death alone does not fail reads of its mapped regions. */
  volatile boolean readsAfterExit;

  private final java.util.concurrent.atomic.AtomicBoolean watchingExit =
      new java.util.concurrent.atomic.AtomicBoolean();

  /** This host and the shared-memory directory: what reclaiming a dead peer's files needs. */
  private final ShmHost self;

  private final Path dir;

  ShmPeer(String session, ShmPeerMetadata meta, RegionTable regions, ShmHost self, Path dir) {
    this.self = self;
    this.dir = dir;
    this.session = session;
    this.meta = meta;
    this.regions = regions;
    this.mapped = new MemorySegment[meta.regions().size()];
  }

  void open() {
    MemorySegment dirFile =
        map(
            Path.of(meta.directoryPath()),
            ShmFiles.HEADER_BYTES + RegionDirectory.bytesFor(meta.directoryCapacity()));
    if (dirFile.get(ValueLayout.JAVA_LONG, 0) != ShmFiles.DIRECTORY_MAGIC
        || dirFile.get(ValueLayout.JAVA_LONG, 8) != meta.nonce()) {
      throw new TransportException(
          session,
          "shm transport: peer '"
              + session
              + "' directory "
              + meta.directoryPath()
              + " is not the one its metadata describes (another file under that name, or another /dev/shm)");
    }
    directorySlots = dirFile.asSlice(ShmFiles.HEADER_BYTES);
    boolean needsAttach = false;
    for (int i = 0; i < mapped.length; i++) {
      ShmPeerMetadata.Region r = meta.regions().get(i);
      if (r.shared()) {
        mapped[i] = map(Path.of(r.path()), r.length());
      } else {
        needsAttach = true;
      }
    }
    if (needsAttach) {
      probeAttach();
    }
  }

  /**
   * Maps a peer's file read-only after checking it is at least {@code length} bytes (a shorter file
   * would SIGBUS the reader); its creator never truncates it.
   */
  private MemorySegment map(Path path, long length) {
    try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ)) {
      long size = ch.size();
      if (size < length) {
        throw new TransportException(
            session,
            "shm transport: peer '"
                + session
                + "' file "
                + path
                + " holds "
                + size
                + " bytes, its metadata says "
                + length);
      }
      return ch.map(FileChannel.MapMode.READ_ONLY, 0, length, arena);
    } catch (AccessDeniedException e) {
      throw new TransportException(
          session,
          "shm transport: may not open peer '"
              + session
              + "' shared memory "
              + path
              + " ("
              + describeAccess(path)
              + "; this process runs as uid "
              + self.uid()
              + "): run the receiver as the publisher's user, or let the publisher widen access with "
              + ShmFiles.GROUP,
          e);
    } catch (NoSuchFileException e) {
      throw new TransportException(
          session,
          "shm transport: peer '"
              + session
              + "' shared memory "
              + path
              + " is gone (the peer deregistered it or exited)",
          e);
    } catch (IOException e) {
      throw new TransportException(
          session,
          "shm transport: cannot map peer '" + session + "' shared memory " + path + ": " + e,
          e);
    }
  }

  /**
   * Reads one byte of the peer's registered memory with process_vm_readv, so a refusal shows at
   * connect.
   */
  private void probeAttach() {
    if (!meta.crossMemoryAttach() || !Shm.crossMemoryAttach()) {
      throw new TransportException(
          session,
          "shm transport: peer '"
              + session
              + "' serves registered memory, which"
              + " needs cross-memory attach (process_vm_readv) on both sides: "
              + (meta.crossMemoryAttach()
                  ? "here it fails: " + Shm.crossMemoryAttachCause()
                  : "it fails at the peer")
              + "; the peer can allocate() its buffers in shared memory instead");
    }
    ShmPeerMetadata.Region first = null;
    for (ShmPeerMetadata.Region r : meta.regions()) {
      if (!r.shared()) {
        first = r;
        break;
      }
    }
    try (Arena a = Arena.ofConfined()) {
      MemorySegment one = a.allocate(1);
      MemorySegment local = a.allocate(16);
      MemorySegment remote = a.allocate(16);
      local.set(ValueLayout.JAVA_LONG, 0, one.address());
      local.set(ValueLayout.JAVA_LONG, 8, 1);
      remote.set(ValueLayout.JAVA_LONG, 0, first.base());
      remote.set(ValueLayout.JAVA_LONG, 8, 1);
      ShmNative.processVmReadv((int) meta.host().pid(), local, remote, 1, ShmNative.callState(a));
    } catch (ShmNative.NativeError e) {
      throw attachFailure(e, 0);
    }
  }

  TransportException attachFailure(ShmNative.NativeError e, long done) {
    String why =
        switch (e.errno) {
          case ShmNative.EPERM, ShmNative.EACCES ->
              "may not read its memory ("
                  + e.getMessage()
                  + "; it runs as uid "
                  + meta.host().uid()
                  + ", this process as uid "
                  + self.uid()
                  + "): run the receiver as the publisher's user";
          case ShmNative.ESRCH -> "has exited (" + e.getMessage() + ")";
          default -> e.getMessage() + " after " + done + " bytes";
        };
    return new TransportException(
        session, "shm transport: peer '" + session + "' (pid " + meta.host().pid() + ") " + why, e);
  }

  boolean alive() {
    return ShmHost.alive(meta.host().pid(), meta.host().startTime());
  }

  /**
   * Deletes the files a dead peer left (its mappings here stay valid until this peer is closed).
   */
  void reclaimIfDead() {
    if (!alive()) {
      ShmFiles.reclaim(dir, self);
    }
  }

  /**
   * After a failed copy: a peer killed mid-read may still be tearing down for a few milliseconds;
   * wait up to {@link #EXIT_GRACE_NANOS} for it to be gone, then reclaim its files; a peer still
   * there then is watched on a virtual thread for up to {@link #EXIT_WATCH_NANOS}, and its files
   * reclaimed once it is gone.
   */
  void reclaimOnceGone() {
    awaitGone(EXIT_GRACE_NANOS);
    if (!alive()) {
      reclaimIfDead();
    } else if (watchingExit.compareAndSet(false, true)) {
      // Still tearing down (or not dying at all): the read fails now, the files go once it is
      // gone.
      Thread.ofVirtual()
          .name("mx-shm-reclaim-" + session)
          .start(
              () -> {
                awaitGone(EXIT_WATCH_NANOS);
                reclaimIfDead();
                watchingExit.set(false);
              });
    }
  }

  private void awaitGone(long nanos) {
    long until = System.nanoTime() + nanos;
    while (alive() && System.nanoTime() - until < 0) {
      java.util.concurrent.locks.LockSupport.parkNanos(2_000_000);
    }
  }

  /** Whether it was closed (replaced by a newer connect, or its endpoint closed). */
  boolean isClosed() {
    return closed;
  }

  @Override
  public void close() {
    if (!closed) {
      closed = true;
      arena.close();
    }
  }

  private static String describeAccess(Path path) {
    try {
      return "mode "
          + PosixFilePermissions.toString(Files.getPosixFilePermissions(path))
          + ", owner uid "
          + Files.getAttribute(path, "unix:uid");
    } catch (IOException | RuntimeException e) {
      return "its mode cannot be read either";
    }
  }
}
