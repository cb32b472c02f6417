package dev.mx.transport.cudaipc;

import dev.mx.api.annotation.Stable;
import dev.mx.api.error.TransportException;
import dev.mx.api.transport.MemoryKind;
import dev.mx.api.transport.MemoryRegistration;
import dev.mx.api.transport.PendingRead;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.api.transport.TransportConfig;
import dev.mx.api.util.Closeables;
import dev.mx.cuda.CudaDevice;
import dev.mx.cuda.CudaIpc;
import dev.mx.cuda.CudaMemory;
import dev.mx.transport.kit.AbstractTransport;
import dev.mx.transport.kit.BookedRegistration;
import dev.mx.transport.kit.PeerMetadataCodec;
import dev.mx.transport.kit.PeerTable;
import dev.mx.transport.kit.RegionBook;
import dev.mx.transport.kit.RegionTable;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Reads between processes of one host through CUDA IPC. A publisher registers device allocations;
 * its metadata carries, per region, the IPC handle of the allocation holding it. A receiver in
 * another process maps each allocation once ({@code cuIpcOpenMemHandle}) and reads with {@code
 * cuMemcpyAsync} on its device's stream, device to device (or into registered host memory);
 * completion is an event polled until the timeout. A peer in the same process (CUDA cannot open its
 * own handles) is reached directly, through its live registrations, which is also how host memory
 * is read: host regions are never exported.
 *
 * <p>Validation is that of every transport: each descriptor must lie in one region the peer
 * published and one region registered here, checked for the whole batch before anything is copied.
 * Closing unmaps the peers' allocations (last mapped first), then drops registrations.
 */
@Stable
public final class CudaIpcTransport extends AbstractTransport {
  /** The backend's name. */
  public static final String NAME = "cuda-ipc";

  /** Option: the device whose stream runs this endpoint's copies. */
  public static final String DEVICE_PROPERTY = "cuda.device";

  private static final long PID = ProcessHandle.current().pid();

  /** Live endpoints of this process by token: same-process peers resolve to objects. */
  private static final Map<UUID, CudaIpcTransport> LIVE = new ConcurrentHashMap<>();

  private final CudaDevice device;
  private final UUID token = UUID.randomUUID();
  private final RegionBook<Registration> book = new RegionBook<>(NAME);
  private final PeerTable<Peer> peers = new PeerTable<>(NAME);

  CudaIpcTransport(TransportConfig config) {
    super(config);
    int ordinal;
    try {
      ordinal = Integer.parseInt(config.property(DEVICE_PROPERTY, "0"));
    } catch (NumberFormatException e) {
      throw new TransportException(
          null,
          "cuda-ipc transport: option "
              + DEVICE_PROPERTY
              + "='"
              + config.property(DEVICE_PROPERTY, "")
              + "' is not a device ordinal",
          e);
    }
    this.device = CudaDevice.get(ordinal);
    LIVE.put(token, this);
  }

  @Override
  public String name() {
    return NAME;
  }

  /** The device whose stream runs this endpoint's copies. */
  public CudaDevice device() {
    return device;
  }

  // ---- registration ----

  private static final class Registration extends BookedRegistration {
    /** Set for device memory: the allocation's handle and the region's offset in it. */
    final CudaIpc.Export export;

    Registration(
        RegionBook<Registration> book,
        int id,
        MemorySegment segment,
        MemoryKind kind,
        CudaIpc.Export export) {
      super(book, id, segment, kind);
      this.export = export;
    }
  }

  /** Host memory (read only within this process) and the memory of every device. */
  @Override
  public boolean supportsMemory(MemoryKind kind) {
    return true;
  }

  /** Memory of unstated kind: the driver says whether the address is device memory. */
  @Override
  protected MemoryRegistration doRegister(MemorySegment region) {
    return add(region, CudaMemory.kindOf(region.address()), false);
  }

  @Override
  protected MemoryRegistration doRegister(MemorySegment region, MemoryKind kind) {
    return add(region, kind, true);
  }

  private MemoryRegistration add(MemorySegment region, MemoryKind kind, boolean stated) {
    CudaIpc.Export export = null;
    if (kind.isDevice()) {
      MemoryKind actual = stated ? CudaMemory.kindOf(region.address()) : kind;
      if (!actual.equals(kind)) {
        throw new TransportException(
            null,
            "cuda-ipc transport: region 0x"
                + Long.toHexString(region.address())
                + "+"
                + region.byteSize()
                + " was registered as "
                + kind
                + " memory but the driver says it is "
                + actual);
      }
      export = CudaIpc.export(CudaDevice.get(kind.ordinal()), region.address());
      if (region.address() + region.byteSize()
          > export.allocationBase() + export.allocationSize()) {
        throw new TransportException(
            null,
            "cuda-ipc transport: region 0x"
                + Long.toHexString(region.address())
                + "+"
                + region.byteSize()
                + " runs past the end of its device allocation 0x"
                + Long.toHexString(export.allocationBase())
                + "+"
                + export.allocationSize());
      }
    }
    CudaIpc.Export e = export;
    return book.add(region, id -> new Registration(book, id, region, kind, e));
  }

  // ---- metadata ----

  @Override
  public byte[] localMetadata() {
    ensureOpen();
    List<CudaIpcMetadata.Region> out = new ArrayList<>();
    for (Registration r : book.all()) {
      out.add(
          r.export == null
              ? new CudaIpcMetadata.Region(
                  r.segment().address(),
                  r.segment().byteSize(),
                  -1,
                  0,
                  new byte[CudaIpc.HANDLE_BYTES])
              : new CudaIpcMetadata.Region(
                  r.segment().address(),
                  r.segment().byteSize(),
                  r.memoryKind().ordinal(),
                  r.segment().address() - r.export.allocationBase(),
                  r.export.handle()));
    }
    return new CudaIpcMetadata(PID, token, device.ordinal(), out).encode();
  }

  /**
   * One region a peer published, as this process reaches it ({@code localBase} = -1: not reachable
   * here).
   */
  private record PeerRegion(long base, long length, boolean deviceMemory, long localBase) {}

  /**
   * A connected peer: in this process (read through its live registrations) or mapped from another
   * one.
   */
  private static final class Peer implements AutoCloseable {
    final String session;
    final CudaIpcTransport local;
    final RegionTable table;
    final PeerRegion[] regions;

    /** Mapped allocations, in the order they were opened. */
    final List<Long> mapped;

    final CudaDevice device;
    private final AtomicBoolean closed = new AtomicBoolean();

    Peer(
        String session,
        CudaIpcTransport local,
        RegionTable table,
        PeerRegion[] regions,
        List<Long> mapped,
        CudaDevice device) {
      this.session = session;
      this.local = local;
      this.table = table;
      this.regions = regions;
      this.mapped = mapped;
      this.device = device;
    }

    @Override
    public void close() {
      if (closed.compareAndSet(false, true)) {
        List<AutoCloseable> unmaps = new ArrayList<>();
        for (int i = mapped.size() - 1; i >= 0; i--) {
          long base = mapped.get(i);
          unmaps.add(() -> CudaIpc.close(device, base));
        }
        Closeables.closeAll(unmaps);
      }
    }
  }

  /** The cuda-ipc metadata peers publish (no bundle: routing hands cuda-ipc its own blob). */
  private static final PeerMetadataCodec<CudaIpcMetadata> CODEC =
      PeerMetadataCodec.of(CudaIpcMetadata::decode, CudaIpcMetadata::regions);

  @Override
  public void connect(String session, byte[] peerMetadata) {
    ensureOpen();
    PeerMetadataCodec.Decoded<CudaIpcMetadata> decoded = decodePeer(session, peerMetadata, CODEC);
    CudaIpcMetadata meta = decoded.metadata();
    Peer peer;
    if (meta.pid() == PID) {
      CudaIpcTransport live = LIVE.get(meta.token());
      if (live == null) {
        throw new TransportException(
            session,
            "cuda-ipc transport: peer '"
                + session
                + "' claims this process but is not a live endpoint here (closed?)");
      }
      peer = new Peer(session, live, null, null, List.of(), device);
    } else {
      peer = mapRemote(session, meta.regions(), decoded.regions());
    }
    peers.put(session, peer);
  }

  /** Maps each device allocation {@code published} names once; {@code table} indexes them. */
  private Peer mapRemote(
      String session, List<CudaIpcMetadata.Region> published, RegionTable table) {
    int count = published.size();
    PeerRegion[] regs = new PeerRegion[count];
    Map<String, Long> opened = new HashMap<>();
    List<Long> mapped = new ArrayList<>();
    try {
      for (int i = 0; i < count; i++) {
        CudaIpcMetadata.Region r = published.get(i);
        long localBase = -1;
        if (r.isDevice()) {
          // Regions of one allocation share its handle; map it once.
          String key = HexFormat.of().formatHex(r.handle());
          Long allocation = opened.get(key);
          if (allocation == null) {
            allocation = CudaIpc.open(device, r.handle());
            opened.put(key, allocation);
            mapped.add(allocation);
          }
          localBase = allocation + r.offsetInAllocation();
        }
        regs[i] = new PeerRegion(r.base(), r.length(), r.isDevice(), localBase);
      }
      return new Peer(session, null, table, regs, List.copyOf(mapped), device);
    } catch (RuntimeException e) {
      new Peer(session, null, null, null, mapped, device).close();
      if (e instanceof TransportException) {
        throw e;
      }
      throw new TransportException(
          session,
          "cuda-ipc transport: cannot map the allocations of peer '"
              + session
              + "': "
              + e.getMessage(),
          e);
    }
  }

  @Override
  public boolean isConnected(String session) {
    return session.equals(localSession()) || peers.contains(session);
  }

  // ---- reads ----

  private static final class IpcBatch implements PendingRead {
    final String session;
    final long[] src;
    final long[] dst;
    final long[] bytes;
    final long total;
    CudaIpc.Event done;

    IpcBatch(String session, long[] src, long[] dst, long[] bytes, long total) {
      this.session = session;
      this.src = src;
      this.dst = dst;
      this.bytes = bytes;
      this.total = total;
    }

    @Override
    public String session() {
      return session;
    }

    @Override
    public int descriptorCount() {
      return src.length;
    }

    @Override
    public long bytes() {
      return total;
    }
  }

  @Override
  protected PendingRead prepare(String session, List<ReadDescriptor> group) {
    RegionTable from;
    PeerRegion[] remote = null;
    if (session.equals(localSession())) {
      from = book.table();
    } else {
      Peer p = peers.get(session);
      if (p.local != null) {
        if (p.local.isClosed()) {
          throw new TransportException(
              session, "cuda-ipc transport: peer '" + session + "' was closed");
        }
        from = p.local.book.table();
      } else {
        from = p.table;
        remote = p.regions;
      }
    }
    RegionTable to = book.table();
    int n = group.size();
    long[] src = new long[n];
    long[] dst = new long[n];
    long[] bytes = new long[n];
    long total = 0;
    for (int i = 0; i < n; i++) {
      ReadDescriptor d = group.get(i);
      int s = from.find(d.srcAddr(), d.nbytes());
      if (s < 0) {
        throw sourceOutsideRegions(i, d, from);
      }
      if (to.find(d.dstAddr(), d.nbytes()) < 0) {
        throw destinationOutsideRegions(i, d, to);
      }
      long srcAddr = d.srcAddr();
      if (remote != null) {
        PeerRegion r = remote[s];
        if (!r.deviceMemory()) {
          throw new TransportException(
              session,
              "cuda-ipc transport: descriptor #"
                  + i
                  + " "
                  + d
                  + " reads host memory"
                  + " of peer '"
                  + session
                  + "' in another process; cuda-ipc exports device memory only (use shm or ucx"
                  + " for host memory); nothing in this batch was read");
        }
        srcAddr = r.localBase() + (d.srcAddr() - r.base());
      }
      src[i] = srcAddr;
      dst[i] = d.dstAddr();
      bytes[i] = d.nbytes();
      total += d.nbytes();
    }
    return new IpcBatch(session, src, dst, bytes, total);
  }

  @Override
  protected void start(PendingRead prepared) {
    IpcBatch b = (IpcBatch) prepared;
    for (int i = 0; i < b.src.length; i++) {
      CudaMemory.copyAsync(device, b.dst[i], b.src[i], b.bytes[i]);
    }
    b.done = new CudaIpc.Event(device);
  }

  @Override
  protected void await(List<PendingRead> started, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    List<IpcBatch> pending = new ArrayList<>();
    for (PendingRead p : started) {
      pending.add((IpcBatch) p);
    }
    try {
      long spins = 0;
      while (!pending.isEmpty()) {
        for (int i = pending.size() - 1; i >= 0; i--) {
          IpcBatch b = pending.get(i);
          boolean done;
          try {
            done = b.done.isDone();
          } catch (RuntimeException e) {
            throw new TransportException(
                b.session,
                "cuda-ipc transport: reading from peer '"
                    + b.session
                    + "' failed: "
                    + e.getMessage(),
                e);
          }
          if (done) {
            pending.remove(i);
          }
        }
        if (pending.isEmpty()) {
          break;
        }
        if (System.nanoTime() - deadline > 0) {
          List<String> names = pending.stream().map(IpcBatch::session).distinct().toList();
          throw new TransportException(
              names.getFirst(),
              "cuda-ipc transport: reads from peer(s) "
                  + names
                  + " did not complete within "
                  + timeout);
        }
        // Spin briefly (copies of a few MiB finish in microseconds), then back off.
        if (++spins > 1000) {
          java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.MICROSECONDS.toNanos(50));
        } else {
          Thread.onSpinWait();
        }
      }
    } finally {
      // Destroying an event whose copies are still running (a timeout) is allowed: the driver frees
      // it
      // once they end.
      for (PendingRead p : started) {
        IpcBatch b = (IpcBatch) p;
        if (b.done != null) {
          b.done.close();
        }
      }
    }
  }

  @Override
  protected void doClose() {
    LIVE.remove(token);
    List<RuntimeException> failures = peers.closeAll();
    book.clear();
    throwCloseFailures(failures);
  }

  @Override
  public String toString() {
    return "CudaIpcTransport["
        + localSession()
        + ", cuda:"
        + device.ordinal()
        + ", regions "
        + book.table()
        + ", peers "
        + peers.sessions()
        + "]";
  }
}
