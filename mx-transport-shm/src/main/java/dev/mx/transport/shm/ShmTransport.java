package dev.mx.transport.shm;

import dev.mx.api.annotation.Stable;
import dev.mx.api.error.TransportException;
import dev.mx.api.transport.MemoryKind;
import dev.mx.api.transport.MemoryRegistration;
import dev.mx.api.transport.PendingRead;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.api.transport.TransportConfig;
import dev.mx.api.util.Settings;
import dev.mx.transport.kit.AbstractTransport;
import dev.mx.transport.kit.BookedRegistration;
import dev.mx.transport.kit.LocalCopy;
import dev.mx.transport.kit.PeerMetadataCodec;
import dev.mx.transport.kit.PeerTable;
import dev.mx.transport.kit.RegionBook;
import dev.mx.transport.kit.RegionDirectory;
import dev.mx.transport.kit.RegionTable;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.GroupPrincipal;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Same-host one-sided reads through shared memory. Memory the transport {@link #allocate allocates}
 * lives in a file of the shared-memory directory ({@code /dev/shm}), created for the owner only (a
 * {@code shm.group} setting widens it to a group, read-only), its pages reserved up front and never
 * truncated; a receiver maps it read-only once at {@link #connect} and reads are plain memory
 * copies. Memory a caller merely {@link #register registers} is read with {@code process_vm_readv}
 * (the kernel copies from the publisher's address space; same user only).
 *
 * <p>Every endpoint also publishes a {@link RegionDirectory} in a shared file; a receiver checks
 * the slots of the regions a call reads before any byte moves (so a deregistered region is refused)
 * and again after its copies, together with the publisher's liveness (pid and start time): a
 * publisher that died or deregistered meanwhile fails the call with an error naming it. Nothing a
 * receiver does waits on a publisher, so a publisher killed at any moment cannot wedge it; a
 * mapping never shrinks, so it cannot crash it (no SIGBUS); and a receiver's death is invisible to
 * the publisher.
 *
 * <p>Files are named after their creator ({@link ShmFiles}): a clean close deletes them, and every
 * new endpoint (and a receiver that finds a peer dead) deletes those of dead processes.
 */
@Stable
public final class ShmTransport extends AbstractTransport {
  private static final Logger LOG = LoggerFactory.getLogger(ShmTransport.class);

  /**
   * Config property (or {@code -Dmx.shm.group} / {@code MX_SHM_GROUP}): a group that may read this
   * endpoint's files.
   */
  public static final String GROUP = ShmFiles.GROUP;

  /** Config property: the most regions an endpoint registers at once (default 4096). */
  public static final String MAX_REGIONS = "shm.maxRegions";

  private final ShmHost self;
  private final Path dir;
  private final long nonce;
  private final String prefix;
  private final GroupPrincipal group;
  private final Path directoryPath;
  private final Arena directoryArena;
  private final RegionDirectory directory;

  /**
   * Serializes registering, deregistering and publishing the registrations (a directory slot is
   * claimed and released with the book's change); guards {@link #nextFile}.
   */
  private final Object registry = new Object();

  private final RegionBook<ShmRegistration> book;
  private long nextFile;
  private final PeerTable<ShmPeer> peers = new PeerTable<>("shm");

  /**
   * Bytes copied from peers' mapped (allocated) memory, and bytes read from their registered memory
   * by attach.
   */
  private final LongAdder mappedBytesRead = new LongAdder();

  private final LongAdder attachedBytesRead = new LongAdder();

  @SuppressWarnings("MustBeClosedChecker") // the directory arena is a field, closed by close()
  ShmTransport(TransportConfig config) {
    super(config);
    Shm.ensureAvailability();
    this.book = new RegionBook<>("shm", config.session());
    this.self = Shm.self();
    this.dir = Shm.directory();
    ShmFiles.reclaim(dir, self);
    this.nonce = ShmFiles.newNonce();
    this.prefix = ShmFiles.endpointPrefix(self, nonce);
    String groupName =
        config.property(GROUP, Settings.system().get("mx.shm.group", "MX_SHM_GROUP"));
    int capacity;
    try {
      capacity = Integer.parseInt(config.property(MAX_REGIONS, "4096"));
      if (capacity <= 0) {
        throw new NumberFormatException("not positive");
      }
      this.group =
          groupName == null || groupName.isBlank()
              ? null
              : FileSystems.getDefault()
                  .getUserPrincipalLookupService()
                  .lookupPrincipalByGroupName(groupName.trim());
    } catch (NumberFormatException | IOException e) {
      throw new TransportException(
          null,
          "shm transport: bad configuration for endpoint '"
              + config.session()
              + "' ("
              + GROUP
              + "="
              + groupName
              + ", "
              + MAX_REGIONS
              + "="
              + config.property(MAX_REGIONS, "4096")
              + "): "
              + e,
          e);
    }
    this.directoryPath = dir.resolve(prefix + "dir");
    this.directoryArena = Arena.ofShared();
    try {
      MemorySegment file =
          createFile(
              directoryPath,
              ShmFiles.HEADER_BYTES + RegionDirectory.bytesFor(capacity),
              directoryArena);
      file.set(ValueLayout.JAVA_LONG, 8, nonce);
      file.set(ValueLayout.JAVA_LONG, 16, self.pid());
      file.set(ValueLayout.JAVA_LONG, 24, capacity);
      this.directory = new RegionDirectory(file.asSlice(ShmFiles.HEADER_BYTES));
      file.set(ValueLayout.JAVA_LONG, 0, ShmFiles.DIRECTORY_MAGIC);
    } catch (RuntimeException | Error e) {
      directoryArena.close();
      deleteQuietly(directoryPath);
      throw e;
    }
  }

  @Override
  public String name() {
    return "shm";
  }

  // ---------------------------------------------------------------- files

  /**
   * Creates {@code path} (it must not exist) for the owner only, or owner plus {@link #group}
   * read-only, reserves {@code size} bytes of pages and maps it read-write into {@code arena}. On
   * failure nothing is left behind.
   */
  private MemorySegment createFile(Path path, long size, Arena arena) {
    Set<PosixFilePermission> ownerOnly = PosixFilePermissions.fromString("rw-------");
    try (FileChannel ch =
        FileChannel.open(
            path,
            Set.of(
                StandardOpenOption.CREATE_NEW, StandardOpenOption.READ, StandardOpenOption.WRITE),
            PosixFilePermissions.asFileAttribute(ownerOnly))) {
      ShmFiles.created(path);
      if (group != null) {
        Files.setAttribute(path, "posix:group", group);
        Files.setPosixFilePermissions(path, PosixFilePermissions.fromString("rw-r-----"));
      }
      // Reserve the pages now: a full tmpfs then fails here, not with SIGBUS on a later write.
      ShmNative.fallocate(path.toString(), size);
      return ch.map(FileChannel.MapMode.READ_WRITE, 0, size, arena);
    } catch (IOException | ShmNative.NativeError | RuntimeException e) {
      deleteQuietly(path);
      throw new TransportException(
          null,
          "shm transport: cannot create "
              + size
              + " bytes of shared memory at "
              + path
              + " for endpoint '"
              + localSession()
              + "': "
              + e.getMessage(),
          e);
    }
  }

  private static void deleteQuietly(Path path) {
    try {
      Files.deleteIfExists(path);
      ShmFiles.deleted(path);
    } catch (IOException | RuntimeException e) {
      LOG.debug("cannot delete {}: {}", path, e.toString());
    }
  }

  // ---------------------------------------------------------------- registration and metadata

  @Override
  protected MemoryRegistration doRegister(MemorySegment region) {
    return registerRegion(region, null, null);
  }

  /**
   * Shared memory: a new file of the shared-memory directory, mapped read-write here and read-only
   * by receivers, so their reads are plain copies. Closing the registration deletes the file and
   * unmaps it here; receivers that still map it are refused by the directory.
   */
  @Override
  @SuppressWarnings(
      "MustBeClosedChecker") // the registration owns the arena; closing it closes the arena
  public MemoryRegistration allocate(long bytes) {
    checkAllocation(bytes);
    Path path;
    synchronized (registry) {
      path = dir.resolve(prefix + "r" + nextFile++);
    }
    Arena arena = Arena.ofShared();
    MemorySegment segment;
    try {
      segment = createFile(path, bytes, arena);
    } catch (RuntimeException | Error e) {
      arena.close();
      throw e;
    }
    try {
      return registerRegion(segment, path, arena);
    } catch (RuntimeException | Error e) {
      arena.close();
      deleteQuietly(path);
      throw e;
    }
  }

  private MemoryRegistration registerRegion(MemorySegment region, Path path, Arena arena) {
    synchronized (registry) {
      ensureOpen();
      return book.add(
          region,
          id -> {
            long cookie = RegionDirectory.newCookie();
            int slot = directory.claim(cookie);
            if (slot < 0) {
              throw new TransportException(
                  null,
                  "shm transport: endpoint '"
                      + localSession()
                      + "' already has "
                      + directory.capacity()
                      + " regions registered; close some or raise "
                      + MAX_REGIONS);
            }
            return new ShmRegistration(book, id, region, path, arena, slot, cookie);
          });
    }
  }

  /** A registered region; for allocated memory also its file and the arena of its mapping. */
  private final class ShmRegistration extends BookedRegistration {
    final Path path;
    final Arena arena;
    final int slot;
    final long cookie;

    ShmRegistration(
        RegionBook<ShmRegistration> book,
        int id,
        MemorySegment segment,
        Path path,
        Arena arena,
        int slot,
        long cookie) {
      super(book, id, segment, MemoryKind.HOST, registry);
      this.path = path;
      this.arena = arena;
      this.slot = slot;
      this.cookie = cookie;
    }

    /**
     * Clears the directory slot first (receivers refuse the region from then on), then deletes and
     * unmaps.
     */
    @Override
    protected void release() {
      directory.release(slot);
      if (path != null) {
        deleteQuietly(path);
        arena.close();
      }
    }
  }

  @Override
  public byte[] localMetadata() {
    ensureOpen();
    List<ShmPeerMetadata.Region> regions = new ArrayList<>();
    synchronized (registry) {
      for (ShmRegistration r : book.all()) {
        regions.add(
            new ShmPeerMetadata.Region(
                r.segment().address(),
                r.segment().byteSize(),
                r.slot,
                r.cookie,
                r.path == null ? null : r.path.toString()));
      }
    }
    return new ShmPeerMetadata(
            self,
            nonce,
            directoryPath.toString(),
            directory.capacity(),
            Shm.crossMemoryAttach(),
            regions)
        .encode();
  }

  // ---------------------------------------------------------------- peers

  /**
   * Connects a peer on this host: same boot id, host name and pid namespace, a live process, and a
   * directory file this endpoint can open whose nonce matches the metadata (proof that both see the
   * same shared memory). Any other peer is refused with the reason, so a routing endpoint falls
   * through to its next transport.
   */
  @Override
  public void connect(String session, byte[] peerMetadata) {
    byte[] blob = peerBlob(session, peerMetadata);
    PeerMetadataCodec.Decoded<ShmPeerMetadata> decoded =
        decodePeer(session, blob, ShmPeerMetadata.CODEC);
    ShmPeerMetadata meta = decoded.metadata();
    RegionTable regions = decoded.regions();
    ShmHost h = meta.host();
    if (!h.bootId().equals(self.bootId())
        || !h.hostname().equals(self.hostname())
        || !h.pidNamespace().equals(self.pidNamespace())) {
      throw new TransportException(
          session,
          "shm transport: peer '"
              + session
              + "' is not on this host (its boot id "
              + h.bootId()
              + ", host "
              + h.hostname()
              + ", "
              + h.pidNamespace()
              + "; here "
              + self.bootId()
              + ", "
              + self.hostname()
              + ", "
              + self.pidNamespace()
              + ")");
    }
    if (!ShmHost.alive(h.pid(), h.startTime())) {
      ShmFiles.reclaim(dir, self); // what it left is of no use to anyone now
      throw new TransportException(
          session, "shm transport: peer '" + session + "' (pid " + h.pid() + ") has exited");
    }
    ShmPeer peer = new ShmPeer(session, meta, regions, self, dir);
    try {
      peer.open();
    } catch (RuntimeException | Error e) {
      peer.close();
      throw e;
    }
    peers.put(session, peer);
  }

  @Override
  public boolean isConnected(String session) {
    return session.equals(localSession()) || peers.contains(session);
  }

  /**
   * A peer's allocated memory lives in files this endpoint mapped at connect; the mappings keep the
   * pages after the peer exited (and after its files were reclaimed), exactly as it left them.
   * Registered memory, read from the peer's address space, dies with it.
   */
  @Override
  public boolean readAfterExit(String session, boolean allowed) {
    ShmPeer peer = peers.find(session);
    if (peer == null) {
      return false;
    }
    for (MemorySegment m : peer.mapped) {
      if (m == null) {
        peer.readsAfterExit = false; // part of its memory dies with it: as before
        return false;
      }
    }
    peer.readsAfterExit = allowed;
    return true;
  }

  // ---------------------------------------------------------------- reads

  @Override
  protected PendingRead prepare(String session, List<ReadDescriptor> group) {
    RegionBook.Snapshot<ShmRegistration> to = book.snapshot();
    if (session.equals(localSession())) {
      return prepareLocalCopy(session, group, to.table(), id -> to.get(id).segment());
    }
    ShmPeer peer = peers.get(session);
    ShmBatch b = new ShmBatch(peer, group);
    RegionTable toTable = to.table();
    List<ShmPeerMetadata.Region> published = peer.meta.regions();
    long total = 0;
    for (int i = 0, n = group.size(); i < n; i++) {
      ReadDescriptor d = group.get(i);
      int r = peer.regions.find(d.srcAddr(), d.nbytes());
      if (r < 0) {
        throw sourceOutsideRegions(i, d, peer.regions);
      }
      int t = toTable.find(d.dstAddr(), d.nbytes());
      if (t < 0) {
        throw destinationOutsideRegions(i, d, toTable);
      }
      b.region[i] = r;
      b.used[r] = true;
      b.src[i] = peer.mapped[r];
      b.srcOff[i] = d.srcAddr() - published.get(r).base();
      b.dst[i] = to.get(t).segment();
      b.dstOff[i] = d.dstAddr() - b.dst[i].address();
      b.len[i] = d.nbytes();
      total += d.nbytes();
    }
    b.bytes = total;
    return b;
  }

  /**
   * Checks every peer's directory and liveness (nothing moves when one fails), copies, then checks
   * again: a region deregistered or a peer that died during the copies fails the call, naming the
   * peer.
   */
  @Override
  protected void await(List<PendingRead> started, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    for (PendingRead p : started) {
      if (p instanceof ShmBatch b) {
        b.guarded(() -> b.check("nothing in this batch was read"));
      }
    }
    for (PendingRead p : started) {
      if (p instanceof ShmBatch b) {
        b.guarded(
            () -> {
              b.copy(deadline, timeout, mappedBytesRead, attachedBytesRead);
              b.check("what was read cannot be trusted");
            });
      } else {
        ((LocalCopy) p).copy();
      }
    }
  }

  // ---------------------------------------------------------------- close

  /** Unmaps every peer, deletes and unmaps every region, then the directory. */
  @Override
  protected void doClose() {
    List<RuntimeException> failures = peers.closeAll();
    synchronized (registry) {
      List<ShmRegistration> all = book.all();
      for (int i = all.size() - 1; i >= 0; i--) {
        try {
          all.get(i).releaseWithEndpoint();
        } catch (RuntimeException e) {
          failures.add(e);
        }
      }
      book.clear();
      try {
        directory.close();
      } finally {
        deleteQuietly(directoryPath);
        directoryArena.close();
      }
    }
    throwCloseFailures(failures);
  }

  /**
   * Bytes this endpoint has copied from peers' shared (allocated, mapped) memory since it was
   * created: the memory-speed path. For diagnostics and tests, next to {@link
   * #attachedBytesRead()}.
   */
  public long mappedBytesRead() {
    return mappedBytesRead.sum();
  }

  /**
   * Bytes this endpoint has read from peers' caller-registered memory with {@code
   * process_vm_readv}.
   */
  public long attachedBytesRead() {
    return attachedBytesRead.sum();
  }

  /** The files of this endpoint start with this (for tests and diagnostics). */
  public String filePrefix() {
    return prefix;
  }

  @Override
  public String toString() {
    return "ShmTransport[session "
        + localSession()
        + ", "
        + book.size()
        + " regions, "
        + peers.size()
        + " peers"
        + (isClosed() ? ", closed]" : "]");
  }
}
