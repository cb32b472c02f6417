package dev.mx.transport.mem;

import dev.mx.api.error.TransportException;
import dev.mx.api.transport.AbstractTransport;
import dev.mx.api.transport.MemoryRegistration;
import dev.mx.api.transport.PendingRead;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.api.transport.RegionTable;
import dev.mx.api.transport.TransportBundle;
import dev.mx.api.transport.TransportConfig;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * In-process transport. A peer is another {@code MemTransport} of this JVM, found through the token in
 * its metadata; reads check the peer's <em>current</em> registrations, so memory a peer deregistered can
 * no longer be read. Copies run on the calling thread with {@link MemorySegment#copy}, at memory speed.
 */
public final class MemTransport extends AbstractTransport {
  private static final int MAGIC = 0x4d584d45; // "MXME"
  /** Live endpoints of this JVM by token, so metadata resolves to an object, never to raw addresses. */
  private static final Map<UUID, MemTransport> LIVE = new ConcurrentHashMap<>();

  private final UUID token = UUID.randomUUID();
  private final AtomicInteger nextRegionId = new AtomicInteger();
  private final Map<Integer, Registration> registrations = new ConcurrentHashMap<>();
  private final Map<String, UUID> peers = new ConcurrentHashMap<>();
  private volatile Regions regions = new Regions(RegionTable.EMPTY, new MemorySegment[0]);

  /** A snapshot of registered regions: the lookup table and the segment for each region id. */
  private record Regions(RegionTable table, MemorySegment[] segments) {}

  MemTransport(TransportConfig config) {
    super(config);
    LIVE.put(token, this);
  }

  @Override
  public String name() {
    return "mem";
  }

  /**
   * In-process memory copies: ~0.5 µs per descriptor (7.5 M/s cache-resident; ~0.5 µs each in the in-process
   * demo's 262k reads), the wire at memory-copy speed, and the local re-slice (the same kind of copy, run by the
   * receiver) at 0.75 of it (docs/performance/foundation.md, mx-refit.md).
   */
  @Override
  public dev.mx.api.transport.TransportCosts costs() {
    return new dev.mx.api.transport.TransportCosts(0.5e-6, 16e9, 12e9);
  }

  @Override
  protected MemoryRegistration doRegister(MemorySegment region) {
    int id = nextRegionId.getAndIncrement();
    Registration r = new Registration(id, region);
    synchronized (registrations) {
      registrations.put(id, r);
      try {
        rebuildRegions();
      } catch (IllegalArgumentException overlap) {
        registrations.remove(id);
        throw new TransportException(null, "mem transport: region 0x" + Long.toHexString(region.address()) + "+"
            + region.byteSize() + " overlaps a region already registered", overlap);
      }
    }
    return r;
  }

  private void rebuildRegions() {
    List<RegionTable.Region> list = new ArrayList<>(registrations.size());
    int maxId = -1;
    for (Registration r : registrations.values()) {
      list.add(new RegionTable.Region(r.segment.address(), r.segment.byteSize(), r.id));
      maxId = Math.max(maxId, r.id);
    }
    MemorySegment[] segs = new MemorySegment[maxId + 1];
    for (Registration r : registrations.values()) {
      segs[r.id] = r.segment;
    }
    regions = new Regions(RegionTable.of(list), segs);
  }

  private final class Registration implements MemoryRegistration {
    final int id;
    final MemorySegment segment;
    private final java.util.concurrent.atomic.AtomicBoolean closed = new java.util.concurrent.atomic.AtomicBoolean();

    Registration(int id, MemorySegment segment) {
      this.id = id;
      this.segment = segment;
    }

    @Override
    public MemorySegment segment() {
      return segment;
    }

    @Override
    public void close() {
      if (closed.compareAndSet(false, true)) {
        synchronized (registrations) {
          registrations.remove(id);
          rebuildRegions();
        }
      }
    }
  }

  @Override
  public byte[] localMetadata() {
    ensureOpen();
    RegionTable t = regions.table();
    ByteBuffer b = ByteBuffer.allocate(4 + 16 + 4).order(ByteOrder.LITTLE_ENDIAN);
    b.putInt(MAGIC).putLong(token.getMostSignificantBits()).putLong(token.getLeastSignificantBits()).putInt(t.size());
    return b.array();
  }

  @Override
  public void connect(String session, byte[] metadata) {
    ensureOpen();
    byte[] peerMetadata = TransportBundle.forTransport(session, name(), metadata);
    ByteBuffer b = ByteBuffer.wrap(peerMetadata).order(ByteOrder.LITTLE_ENDIAN);
    if (peerMetadata.length < 20 || b.getInt() != MAGIC) {
      throw new TransportException(session, "mem transport: metadata for peer '" + session
          + "' is not mem transport metadata (" + peerMetadata.length + " bytes)");
    }
    UUID peerToken = new UUID(b.getLong(), b.getLong());
    if (!LIVE.containsKey(peerToken)) {
      throw new TransportException(session, "mem transport: peer '" + session
          + "' is not a live endpoint of this JVM; the mem transport only reaches memory in its own process"
          + " (use ucx across processes)");
    }
    peers.put(session, peerToken);
  }

  @Override
  public boolean isConnected(String session) {
    return session.equals(localSession()) || peers.containsKey(session);
  }

  private MemTransport peer(String session) {
    if (session.equals(localSession())) {
      return this;
    }
    UUID t = peers.get(session);
    if (t == null) {
      throw unknownPeer(session);
    }
    MemTransport p = LIVE.get(t);
    if (p == null) {
      throw new TransportException(session, "mem transport: peer '" + session + "' was closed");
    }
    return p;
  }

  /**
   * A validated batch: the descriptors and, per descriptor, the source and destination region ids found
   * at validation. Segments are captured then too, so a concurrent deregistration cannot redirect a
   * validated copy.
   */
  private static final class MemBatch implements PendingRead {
    final String session;
    final List<ReadDescriptor> group;
    final MemorySegment[] srcSegments;
    final MemorySegment[] dstSegments;
    final int[] srcRegion;
    final int[] dstRegion;
    long total;

    MemBatch(String session, List<ReadDescriptor> group, MemorySegment[] srcSegments, MemorySegment[] dstSegments) {
      this.session = session;
      this.group = group;
      this.srcSegments = srcSegments;
      this.dstSegments = dstSegments;
      this.srcRegion = new int[group.size()];
      this.dstRegion = new int[group.size()];
    }

    @Override
    public String session() {
      return session;
    }

    @Override
    public int descriptorCount() {
      return srcRegion.length;
    }

    @Override
    public long bytes() {
      return total;
    }
  }

  @Override
  protected PendingRead prepare(String session, List<ReadDescriptor> group) {
    MemTransport peer = peer(session);
    Regions from = peer.regions;
    Regions to = regions;
    RegionTable fromTable = from.table();
    RegionTable toTable = to.table();
    MemBatch b = new MemBatch(session, group, from.segments(), to.segments());
    long total = 0;
    for (int i = 0, n = group.size(); i < n; i++) {
      ReadDescriptor d = group.get(i);
      int s = fromTable.find(d.srcAddr(), d.nbytes());
      if (s < 0) {
        throw sourceOutsideRegions(i, d, fromTable);
      }
      int t = toTable.find(d.dstAddr(), d.nbytes());
      if (t < 0) {
        throw destinationOutsideRegions(i, d, toTable);
      }
      b.srcRegion[i] = s;
      b.dstRegion[i] = t;
      total += d.nbytes();
    }
    b.total = total;
    return b;
  }

  @Override
  protected void start(PendingRead prepared) {
    MemBatch b = (MemBatch) prepared;
    MemorySegment[] src = b.srcSegments;
    MemorySegment[] dst = b.dstSegments;
    List<ReadDescriptor> group = b.group;
    for (int i = 0, n = b.srcRegion.length; i < n; i++) {
      ReadDescriptor d = group.get(i);
      MemorySegment from = src[b.srcRegion[i]];
      MemorySegment to = dst[b.dstRegion[i]];
      MemorySegment.copy(from, d.srcAddr() - from.address(), to, d.dstAddr() - to.address(), d.nbytes());
    }
  }

  @Override
  protected void await(List<PendingRead> started, Duration timeout) {
    // Copies complete inside start(): nothing is ever outstanding.
  }

  @Override
  protected void doClose() {
    LIVE.remove(token);
    synchronized (registrations) {
      registrations.clear();
      regions = new Regions(RegionTable.EMPTY, new MemorySegment[0]);
    }
    peers.clear();
  }
}
