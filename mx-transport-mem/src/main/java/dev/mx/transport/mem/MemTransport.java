package dev.mx.transport.mem;

import dev.mx.api.annotation.Stable;
import dev.mx.api.error.TransportException;
import dev.mx.api.transport.LandingFolds;
import dev.mx.api.transport.MemoryRegistration;
import dev.mx.api.transport.PendingRead;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.api.transport.TransportConfig;
import dev.mx.transport.kit.AbstractTransport;
import dev.mx.transport.kit.BookedRegistration;
import dev.mx.transport.kit.RegionBook;
import dev.mx.transport.kit.RegionTable;
import dev.mx.transport.kit.TransportBundle;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;

/**
 * In-process transport. A peer is another {@code MemTransport} of this JVM, found through the token
 * in its metadata; reads check the peer's <em>current</em> registrations, so memory a peer
 * deregistered can no longer be read. Copies run on the calling thread with {@link
 * MemorySegment#copy}, at memory speed.
 */
@Stable
public final class MemTransport extends AbstractTransport {
  private static final int MAGIC = 0x4d584d45; // "MXME"

  /**
   * Live endpoints of this JVM by token, so metadata resolves to an object, never to raw addresses.
   */
  private static final Map<UUID, MemTransport> LIVE = new ConcurrentHashMap<>();

  private final UUID token = UUID.randomUUID();
  private final RegionBook<Registration> book = new RegionBook<>("mem");
  private final Map<String, UUID> peers = new ConcurrentHashMap<>();

  MemTransport(TransportConfig config) {
    super(config);
    LIVE.put(token, this);
  }

  @Override
  public String name() {
    return "mem";
  }

  /**
   * In-process memory copies: ~0.5 µs per descriptor (7.5 M/s cache-resident; ~0.5 µs each in the
   * in-process demo's 262k reads), the wire at memory-copy speed, and the local re-slice (the same
   * kind of copy, run by the receiver) at 0.75 of it (docs/performance/foundation.md, mx-refit.md).
   */
  @Override
  public dev.mx.api.transport.TransportCosts costs() {
    return new dev.mx.api.transport.TransportCosts(0.5e-6, 16e9, 12e9);
  }

  @Override
  protected MemoryRegistration doRegister(MemorySegment region) {
    return book.add(region, id -> new Registration(book, id, region));
  }

  private static final class Registration extends BookedRegistration {
    Registration(RegionBook<Registration> book, int id, MemorySegment segment) {
      super(book, id, segment);
    }
  }

  @Override
  public byte[] localMetadata() {
    ensureOpen();
    RegionTable t = book.table();
    ByteBuffer b = ByteBuffer.allocate(4 + 16 + 4).order(ByteOrder.LITTLE_ENDIAN);
    b.putInt(MAGIC)
        .putLong(token.getMostSignificantBits())
        .putLong(token.getLeastSignificantBits())
        .putInt(t.size());
    return b.array();
  }

  @Override
  public void connect(String session, byte[] metadata) {
    ensureOpen();
    byte[] peerMetadata = TransportBundle.forTransport(session, name(), metadata);
    ByteBuffer b = ByteBuffer.wrap(peerMetadata).order(ByteOrder.LITTLE_ENDIAN);
    if (peerMetadata.length < 20 || b.getInt() != MAGIC) {
      throw new TransportException(
          session,
          "mem transport: metadata for peer '"
              + session
              + "' is not mem transport metadata ("
              + peerMetadata.length
              + " bytes)");
    }
    UUID peerToken = new UUID(b.getLong(), b.getLong());
    if (!LIVE.containsKey(peerToken)) {
      throw new TransportException(
          session,
          "mem transport: peer '"
              + session
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
   * A validated batch: the descriptors and, per descriptor, the source and destination region ids
   * found at validation. Segments are captured then too, so a concurrent deregistration cannot
   * redirect a validated copy.
   */
  private static final class MemBatch implements PendingRead {
    final String session;
    final List<ReadDescriptor> group;
    final RegionBook.Snapshot<Registration> srcRegions;
    final RegionBook.Snapshot<Registration> dstRegions;
    final int[] srcRegion;
    final int[] dstRegion;
    long total;

    MemBatch(
        String session,
        List<ReadDescriptor> group,
        RegionBook.Snapshot<Registration> srcRegions,
        RegionBook.Snapshot<Registration> dstRegions) {
      this.session = session;
      this.group = group;
      this.srcRegions = srcRegions;
      this.dstRegions = dstRegions;
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
    RegionBook.Snapshot<Registration> from = peer.book.snapshot();
    RegionBook.Snapshot<Registration> to = book.snapshot();
    RegionTable fromTable = from.table();
    RegionTable toTable = to.table();
    MemBatch b = new MemBatch(session, group, from, to);
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
    List<ReadDescriptor> group = b.group;
    // The CPU moves the bytes here: a receiver's fold digests them in the same pass.
    LandingFolds folds = LandingFolds.current();
    for (int i = 0, n = b.srcRegion.length; i < n; i++) {
      ReadDescriptor d = group.get(i);
      MemorySegment from = b.srcRegions.get(b.srcRegion[i]).segment();
      MemorySegment to = b.dstRegions.get(b.dstRegion[i]).segment();
      folds.copy(d, from, d.srcAddr() - from.address(), to, d.dstAddr() - to.address());
    }
  }

  @Override
  protected void await(List<PendingRead> started, Duration timeout) {
    // Copies complete inside start(): nothing is ever outstanding.
  }

  @Override
  protected void doClose() {
    LIVE.remove(token);
    book.clear();
    peers.clear();
  }
}
