package dev.mx.transport.kit;

import dev.mx.api.error.TransportException;
import dev.mx.api.transport.MemoryKind;
import dev.mx.api.transport.MemoryKinds;
import dev.mx.api.transport.MemoryRegistration;
import dev.mx.api.transport.PendingRead;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.api.transport.TransportStats;
import dev.mx.api.util.Settings;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The skeleton every backend shares, so that the read semantics of ModelExpress (ARCHITECTURE §7.7)
 * live in one place: group a batch by peer in first-seen order, drop zero-length descriptors,
 * validate every group before anything is issued, post every group, then await them all; if a post
 * fails, drain what was already posted (logging, not masking) and rethrow the original. {@code
 * MX_RESHARD_SERIAL_READS} (or {@code -Dmx.transport.serialReads}) drains one peer at a time
 * instead.
 *
 * <p>Backends implement {@link #prepare} (validate and build, nothing issued), {@link #start},
 * {@link #await}, {@link #doRegister} and {@link #doClose}.
 */
public abstract class AbstractTransport implements Transport {
  private static final Logger LOG = LoggerFactory.getLogger(AbstractTransport.class);

  protected final TransportConfig config;
  private final AtomicBoolean closed = new AtomicBoolean();
  private final LongAdder bytesMoved = new LongAdder();
  private final LongAdder readsIssued = new LongAdder();
  private final LongAdder batches = new LongAdder();
  private volatile boolean healthy = true;

  protected AbstractTransport(TransportConfig config) {
    this.config = config;
  }

  @Override
  public String localSession() {
    return config.session();
  }

  @Override
  public Duration defaultTimeout() {
    return config.timeout();
  }

  @Override
  public final MemoryRegistration register(MemorySegment region) {
    ensureOpen();
    if (!region.isNative()) {
      throw new TransportException(
          null,
          name()
              + " transport registers native memory only; got a heap segment of "
              + region.byteSize()
              + " bytes");
    }
    if (region.byteSize() == 0) {
      throw new TransportException(
          null,
          name()
              + " transport cannot register an empty region at 0x"
              + Long.toHexString(region.address()));
    }
    return doRegister(region);
  }

  /**
   * Validates as {@link #register(MemorySegment)}, refuses a kind {@link #supportsMemory} does not
   * accept (naming this transport and the kind), and hands device memory to {@link
   * #doRegister(MemorySegment, MemoryKind)}.
   */
  @Override
  public final MemoryRegistration register(MemorySegment region, MemoryKind kind) {
    ensureOpen();
    if (!supportsMemory(kind)) {
      throw MemoryKinds.unsupported(name(), region, kind);
    }
    if (!kind.isDevice()) {
      return register(region);
    }
    if (region.byteSize() == 0) {
      throw new TransportException(
          null,
          name()
              + " transport cannot register an empty "
              + kind
              + " region at 0x"
              + Long.toHexString(region.address()));
    }
    return doRegister(region, kind);
  }

  /**
   * Registers non-empty device memory of {@code kind}; only backends whose {@link #supportsMemory}
   * accepts it.
   */
  protected MemoryRegistration doRegister(MemorySegment region, MemoryKind kind) {
    throw MemoryKinds.unsupported(name(), region, kind);
  }

  @Override
  public final void read(List<ReadDescriptor> batch, Duration timeout) {
    ensureOpen();
    Map<String, List<ReadDescriptor>> groups = groupBySession(batch);
    if (groups.isEmpty()) {
      return;
    }
    List<PendingRead> prepared = new ArrayList<>(groups.size());
    for (Map.Entry<String, List<ReadDescriptor>> g : groups.entrySet()) {
      prepared.add(prepare(g.getKey(), g.getValue()));
    }
    if (serialReads()) {
      for (PendingRead p : prepared) {
        startAndAwait(List.of(p), timeout);
      }
    } else {
      startAndAwait(prepared, timeout);
    }
  }

  private void startAndAwait(List<PendingRead> prepared, Duration timeout) {
    List<PendingRead> started = new ArrayList<>(prepared.size());
    try {
      for (PendingRead p : prepared) {
        start(p);
        started.add(p);
      }
    } catch (RuntimeException postFailure) {
      healthy = false;
      if (!started.isEmpty()) {
        try {
          await(started, timeout);
        } catch (RuntimeException drainFailure) {
          LOG.warn(
              "draining {} posted batch(es) after a failed post also failed: {}",
              started.size(),
              drainFailure.toString());
          postFailure.addSuppressed(drainFailure);
        }
      }
      throw postFailure;
    }
    awaitAndCount(started, timeout);
  }

  @Override
  public final PendingRead post(String session, List<ReadDescriptor> group) {
    ensureOpen();
    List<ReadDescriptor> nonEmpty = new ArrayList<>(group.size());
    for (int i = 0; i < group.size(); i++) {
      ReadDescriptor d = group.get(i);
      if (!d.session().equals(session)) {
        throw new TransportException(
            d.session(),
            "descriptor #"
                + i
                + " "
                + d
                + " does not belong to the batch for session '"
                + session
                + "'");
      }
      if (d.nbytes() > 0) {
        nonEmpty.add(d);
      }
    }
    if (nonEmpty.isEmpty()) {
      return null;
    }
    PendingRead p = prepare(session, nonEmpty);
    try {
      start(p);
    } catch (RuntimeException e) {
      healthy = false;
      throw e;
    }
    return p;
  }

  @Override
  public final void awaitAll(List<PendingRead> posted, Duration timeout) {
    ensureOpen();
    List<PendingRead> live = new ArrayList<>(posted.size());
    for (PendingRead p : posted) {
      if (p != null) {
        live.add(p);
      }
    }
    if (!live.isEmpty()) {
      awaitAndCount(live, timeout);
    }
  }

  private void awaitAndCount(List<PendingRead> started, Duration timeout) {
    try {
      await(started, timeout);
    } catch (RuntimeException e) {
      healthy = false;
      throw e;
    }
    healthy = true;
    for (PendingRead p : started) {
      bytesMoved.add(p.bytes());
      readsIssued.add(p.descriptorCount());
      batches.increment();
    }
  }

  /** Groups by session in first-seen order and drops zero-length descriptors. */
  static Map<String, List<ReadDescriptor>> groupBySession(List<ReadDescriptor> batch) {
    if (batch.isEmpty()) {
      return Map.of();
    }
    // Fast path: one session and no empty descriptors (the common case) needs no copy at all.
    String first = batch.get(0).session();
    boolean uniform = true;
    for (int i = 0, n = batch.size(); i < n && uniform; i++) {
      ReadDescriptor d = batch.get(i);
      uniform = d.nbytes() != 0 && (d.session() == first || d.session().equals(first));
    }
    if (uniform) {
      return Map.of(first, batch);
    }
    Map<String, List<ReadDescriptor>> groups = new LinkedHashMap<>();
    String lastSession = null;
    List<ReadDescriptor> last = null;
    for (ReadDescriptor d : batch) {
      if (d.nbytes() == 0) {
        continue;
      }
      // Batches are mostly long runs of one session: skip the map lookup while the session repeats.
      if (!d.session().equals(lastSession)) {
        lastSession = d.session();
        last = groups.computeIfAbsent(lastSession, s -> new ArrayList<>());
      }
      last.add(d);
    }
    return groups;
  }

  private static boolean serialReads() {
    String v = Settings.system().get("mx.transport.serialReads", "MX_RESHARD_SERIAL_READS");
    return v != null && !v.isEmpty() && !v.equals("0") && !v.equalsIgnoreCase("false");
  }

  @Override
  public TransportStats stats() {
    return new TransportStats(bytesMoved.sum(), readsIssued.sum(), batches.sum());
  }

  @Override
  public boolean isHealthy() {
    return healthy && !closed.get();
  }

  /** Throws when this endpoint was closed. */
  protected final void ensureOpen() {
    if (closed.get()) {
      throw new TransportException(
          null, name() + " transport (session '" + localSession() + "') is closed");
    }
  }

  protected final boolean isClosed() {
    return closed.get();
  }

  @Override
  public final void close() {
    if (closed.compareAndSet(false, true)) {
      doClose();
    }
  }

  /** The error for a descriptor whose source lies outside every region the peer published. */
  protected final TransportException sourceOutsideRegions(
      int index, ReadDescriptor d, RegionTable regions) {
    return new TransportException(
        d.session(),
        name()
            + " transport: descriptor #"
            + index
            + " "
            + d
            + " reads outside every region peer '"
            + d.session()
            + "' published "
            + regions
            + "; nothing in this batch was read");
  }

  /** The error for a descriptor whose destination lies outside every locally registered region. */
  protected final TransportException destinationOutsideRegions(
      int index, ReadDescriptor d, RegionTable regions) {
    return new TransportException(
        d.session(),
        name()
            + " transport: descriptor #"
            + index
            + " "
            + d
            + " writes outside every locally registered region "
            + regions
            + "; nothing in this batch was read");
  }

  /**
   * The first step of a backend's {@code connect}: refuses this endpoint's own session and returns
   * this backend's blob out of {@code metadata} (a {@link TransportBundle} or a single blob).
   */
  protected final byte[] peerBlob(String session, byte[] metadata) {
    ensureOpen();
    java.util.Objects.requireNonNull(session, "session");
    if (session.equals(localSession())) {
      throw new TransportException(
          session,
          name()
              + " transport: cannot connect a peer under this endpoint's own"
              + " session '"
              + session
              + "' (reads naming it already read local memory)");
    }
    return TransportBundle.forTransport(session, name(), metadata);
  }

  /** The first step of a backend's {@link #allocate}: open, and a positive size. */
  protected final void checkAllocation(long bytes) {
    ensureOpen();
    if (bytes <= 0) {
      throw new TransportException(null, name() + " transport cannot allocate " + bytes + " bytes");
    }
  }

  /**
   * Decodes the backend's {@code blob} of peer {@code session} with {@code codec} and indexes the
   * regions it publishes.
   *
   * @throws dev.mx.api.error.TransportException naming the peer when the blob does not decode (the
   *     codec threw an {@link IllegalArgumentException}, or ran out of bytes) or its regions
   *     overlap
   */
  protected final <M> PeerMetadataCodec.Decoded<M> decodePeer(
      String session, byte[] blob, PeerMetadataCodec<M> codec) {
    try {
      M metadata = codec.decode(session, blob);
      List<? extends PeerMetadataCodec.PublishedRegion> regions = codec.regions(metadata);
      return new PeerMetadataCodec.Decoded<>(
          metadata,
          regions.isEmpty()
              ? RegionTable.EMPTY
              : RegionTable.indexed(
                  regions,
                  PeerMetadataCodec.PublishedRegion::base,
                  PeerMetadataCodec.PublishedRegion::length));
    } catch (IllegalArgumentException e) {
      throw unusableMetadata(session, e);
    } catch (java.nio.BufferUnderflowException e) {
      throw unusableMetadata(
          session, new IllegalArgumentException(blob.length + " bytes, truncated", e));
    }
  }

  /** The error for a peer blob that does not decode. */
  protected final TransportException unusableMetadata(
      String session, IllegalArgumentException why) {
    return new TransportException(
        session,
        name() + " transport: metadata for peer '" + session + "' is unusable: " + why.getMessage(),
        why);
  }

  /**
   * Throws what {@link #doClose} met, the first as the cause and the rest suppressed; nothing when
   * empty.
   */
  protected final void throwCloseFailures(List<RuntimeException> failures) {
    if (failures.isEmpty()) {
      return;
    }
    TransportException e =
        new TransportException(
            null,
            name()
                + " transport: closing endpoint '"
                + localSession()
                + "' met "
                + failures.size()
                + " problem(s); first: "
                + failures.getFirst().getMessage(),
            failures.getFirst());
    failures.subList(1, failures.size()).forEach(e::addSuppressed);
    throw e;
  }

  /** The error for a session that was never connected. */
  protected final TransportException unknownPeer(String session) {
    return PeerTable.unknownPeer(name(), session);
  }

  /**
   * Validates a group of reads from this endpoint's own session against {@code regions} (ids
   * resolved to segments by {@code segmentOf}) and builds the copies without moving anything.
   */
  protected final LocalCopy prepareLocalCopy(
      String session,
      List<ReadDescriptor> group,
      RegionTable regions,
      java.util.function.IntFunction<MemorySegment> segmentOf) {
    int n = group.size();
    MemorySegment[] src = new MemorySegment[n];
    MemorySegment[] dst = new MemorySegment[n];
    long[] srcOff = new long[n];
    long[] dstOff = new long[n];
    long[] len = new long[n];
    long total = 0;
    for (int i = 0; i < n; i++) {
      ReadDescriptor d = group.get(i);
      int s = regions.find(d.srcAddr(), d.nbytes());
      if (s < 0) {
        throw sourceOutsideRegions(i, d, regions);
      }
      int t = regions.find(d.dstAddr(), d.nbytes());
      if (t < 0) {
        throw destinationOutsideRegions(i, d, regions);
      }
      src[i] = segmentOf.apply(s);
      srcOff[i] = d.srcAddr() - src[i].address();
      dst[i] = segmentOf.apply(t);
      dstOff[i] = d.dstAddr() - dst[i].address();
      len[i] = d.nbytes();
      total += d.nbytes();
    }
    return new LocalCopy(session, group, src, srcOff, dst, dstOff, len, total);
  }

  /**
   * Validates one peer's group (all non-empty, same session) and builds it without issuing
   * anything.
   */
  protected abstract PendingRead prepare(String session, List<ReadDescriptor> group);

  /**
   * Issues a prepared batch. Nothing by default: for a backend that moves every batch of a call in
   * {@link #await}, once all of them were checked.
   */
  protected void start(PendingRead prepared) {}

  /** Waits until every started batch completed, or throws naming the peers still outstanding. */
  protected abstract void await(List<PendingRead> started, Duration timeout);

  /** Registers native, non-empty memory. */
  protected abstract MemoryRegistration doRegister(MemorySegment region);

  /** Releases everything, children first; runs once. */
  protected abstract void doClose();
}
