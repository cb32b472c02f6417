package dev.mx.transport.ucx;

import dev.mx.api.annotation.Stable;
import dev.mx.api.error.TransportException;
import dev.mx.api.error.TransportTimeoutException;
import dev.mx.api.transport.MemoryRegistration;
import dev.mx.api.transport.PendingRead;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.api.transport.TransportConfig;
import dev.mx.api.util.Settings;
import dev.mx.transport.kit.AbstractTransport;
import dev.mx.transport.kit.PeerMetadataCodec;
import dev.mx.transport.kit.RegionBook;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantLock;
import org.openucx.jucx.ucp.UcpContext;
import org.openucx.jucx.ucp.UcpParams;
import org.openucx.jucx.ucp.UcpWorker;
import org.openucx.jucx.ucp.UcpWorkerParams;

/**
 * One-sided reads over UCX. Each endpoint owns a UCX context and one worker (progressed by a {@link
 * UcxWorkerLoop}), registers callers' native memory in place ({@code ucp_mem_map}, no copies) or
 * hands out memory UCX allocates ({@link #allocate}), and publishes a {@link UcxPeerMetadata} blob.
 * A receiver {@link #connect connects} a peer once (an endpoint, cached).
 *
 * <p>A read goes in two phases, each a set of requests the peer answers with UCX active messages
 * ({@link UcxServe}; one-sided GETs would let a vanished receiver abort the publisher, issue 14).
 * {@link #prepare} checks every descriptor against the regions the peer published and the local
 * registrations; {@link #start} asks the peer, per region the batch reads, whether it is still
 * registered; {@link #await} waits for every peer's answers, rejects the whole call when a region
 * was deregistered meanwhile (so nothing moves), then sends one request per descriptor, which the
 * peer answers with the bytes (zero-copy rendezvous where the transport can), and waits,
 * progressing the worker, spinning briefly and then sleeping on its event fd when nothing moves,
 * all within the call's timeout. Every endpoint serves its own registered regions the same way, and
 * only bytes inside them.
 *
 * <p>A peer that dies or cannot be reached fails the reads waiting on it with a {@link
 * TransportException} naming it; reads that outlive the call's timeout fail with a {@link
 * TransportTimeoutException}. Either way the peer's endpoint is force-closed, so no late byte lands
 * after the call returned, and the next batch to that peer reconnects from its metadata.
 *
 * <p>Close order (UCX aborts the process otherwise): stop the progress thread, close endpoints,
 * deregister memory, destroy the worker, then the context.
 *
 * <p>Split the way Netty splits a native transport: this class holds the endpoint, what it opens
 * and the read checks; {@link UcxRegions} the registered regions and their directory ({@link
 * UcxRegistration} one of them), {@link UcxPeers} the connected peers ({@link UcxPeer} one of them,
 * {@link UcxConnection} one UCX endpoint to it), {@link UcxReads} the moving of a call's batches
 * ({@link UcxBatch} one peer's reads of a call), {@link UcxServe} the answering of peers' reads.
 * What every backend shares (grouping, validation before any byte moves, own-session copies, the
 * live-region directory) comes from mx-transport-kit.
 */
@SuppressWarnings("restricted") // calling native code is what this class is for
@Stable
public final class UcxTransport extends AbstractTransport {
  private final UcxOptions options;
  private final UcpContext context;
  private final UcpWorker worker;
  private final UcxWorkerLoop loop;
  private final ReentrantLock workerLock = new ReentrantLock();
  private final byte[] workerAddress;
  private final UcxRegions regions;
  private final UcxPeers peers;
  private final UcxReads reads;

  UcxTransport(TransportConfig config) {
    super(config);
    Ucx.ensureAvailability();
    UcxOptions opts;
    try {
      opts = UcxOptions.from(config, Settings.system());
    } catch (IllegalArgumentException e) {
      throw new TransportException(
          null,
          "ucx transport: bad configuration for endpoint '"
              + config.session()
              + "': "
              + e.getMessage(),
          e);
    }
    this.options = opts;
    List<AutoCloseable> opened = new ArrayList<>();
    UcpContext ctx = null;
    UcpWorker w = null;
    Map<Long, UcxBatch> awaiting = new ConcurrentHashMap<>();
    try {
      UcpParams params =
          new UcpParams().requestRmaFeature().requestAmFeature().requestWakeupFeature();
      if (opts.tls() != null) {
        params.setConfig("TLS", opts.tls());
      }
      opts.ucxConfig().forEach(params::setConfig);
      ctx = UcxVersionWarningFilter.run(() -> new UcpContext(params));
      opened.add(ctx);
      w = ctx.newWorker(new UcpWorkerParams().requestThreadSafety());
      opened.add(w);
      this.regions =
          new UcxRegions(
              config.session(), ctx, workerLock, opts.maxRegions(), this::ensureOpen, opened);
      this.workerAddress = UcxRegions.bytes(w.getAddress());
      // Handlers (answering peers' reads, dispatching replies to ours) before the progress thread
      // starts, so
      // no request finds the worker without them.
      new UcxServe(config.session(), regions::snapshot, w, awaiting);
      this.loop = new UcxWorkerLoop(w, config.session(), workerLock);
    } catch (RuntimeException | Error e) {
      // Reverse order: the directory's arena, its memory, the worker, the context.
      for (int i = opened.size() - 1; i >= 0; i--) {
        try {
          opened.get(i).close();
        } catch (Exception suppressed) {
          e.addSuppressed(suppressed);
        }
      }
      throw new TransportException(
          null,
          "ucx transport: could not open endpoint '"
              + config.session()
              + "' (UCX_TLS="
              + (opts.tls() == null ? "from environment" : opts.tls())
              + "): "
              + e,
          e);
    }
    this.context = ctx;
    this.worker = w;
    this.peers =
        new UcxPeers(config.session(), w, opts.peerErrorHandling(), loop, this::ensureOpen);
    this.reads = new UcxReads(loop, this::ensureOpen, this::isClosed, awaiting);
  }

  @Override
  public String name() {
    return "ucx";
  }

  /**
   * Reads answered by the peer: ~10-20 µs per descriptor and one to a few GB/s over TCP (47 k 4 KiB
   * reads/s and 1.2-1.3 GB/s in 1-64 MiB reads on a loaded 2-core machine,
   * docs/performance/mx-transport-ucx.md); RDMA NICs are faster, override with {@code
   * mx.plan.cost.*}.
   */
  @Override
  public dev.mx.api.transport.TransportCosts costs() {
    return new dev.mx.api.transport.TransportCosts(10e-6, 3e9, 8e9);
  }

  // ---------------------------------------------------------------- registration and metadata

  @Override
  protected MemoryRegistration doRegister(MemorySegment region) {
    return regions.register(region);
  }

  /**
   * Memory UCX allocates ({@code ucp_mem_map} with {@code UCP_MEM_MAP_ALLOCATE}) and registers.
   * With shared memory transports it lives in a segment a reader on the same host maps and copies
   * from directly, the path ucx_perftest measures, instead of GETs UCX 1.13 emulates for memory it
   * merely registered. Closing the registration makes the segment unusable at once (it is bound to
   * an arena closed then); UCX frees the memory a few seconds later (see {@link UcxQuarantine}).
   */
  @Override
  public MemoryRegistration allocate(long bytes) {
    checkAllocation(bytes);
    return regions.allocate(bytes);
  }

  @Override
  public byte[] localMetadata() {
    ensureOpen();
    return regions.metadata(workerAddress).encode();
  }

  // ---------------------------------------------------------------- peers

  @Override
  public void connect(String session, byte[] metadata) {
    byte[] blob = peerBlob(session, metadata);
    PeerMetadataCodec.Decoded<UcxPeerMetadata> decoded =
        decodePeer(session, blob, UcxPeerMetadata.CODEC);
    peers.connect(session, decoded.metadata(), decoded.regions());
  }

  @Override
  public boolean isConnected(String session) {
    return session.equals(localSession()) || peers.contains(session);
  }

  // ---------------------------------------------------------------- batches

  @Override
  protected PendingRead prepare(String session, List<ReadDescriptor> group) {
    RegionBook.Snapshot<UcxRegistration> to = regions.snapshot();
    int n = group.size();
    if (session.equals(localSession())) {
      return prepareLocalCopy(session, group, to.table(), id -> to.get(id).segment());
    }
    UcxPeer peer = peers.get(session);
    if (peer == null) {
      throw unknownPeer(session);
    }
    long[] src = new long[n];
    long[] dst = new long[n];
    long[] len = new long[n];
    int[] region = new int[n];
    boolean[] used = new boolean[peer.cookies.length];
    long total = 0;
    for (int i = 0; i < n; i++) {
      ReadDescriptor d = group.get(i);
      int r = peer.regions.find(d.srcAddr(), d.nbytes());
      if (r < 0) {
        throw sourceOutsideRegions(i, d, peer.regions);
      }
      if (to.table().find(d.dstAddr(), d.nbytes()) < 0) {
        throw destinationOutsideRegions(i, d, to.table());
      }
      src[i] = d.srcAddr();
      dst[i] = d.dstAddr();
      len[i] = d.nbytes();
      region[i] = r;
      used[r] = true;
      total += d.nbytes();
    }
    return new UcxBatch(peer, group, src, dst, len, region, used, total);
  }

  /** Connects (if needed) and issues the batch's probe ({@link UcxReads#start}). */
  @Override
  protected void start(PendingRead prepared) {
    if (!(prepared instanceof UcxBatch b)) {
      return; // local copies happen in await(), once every peer of the call has been checked
    }
    reads.start(b);
  }

  /** Waits for the call's probes, then moves its bytes ({@link UcxReads#await}). */
  @Override
  protected void await(List<PendingRead> started, Duration timeout) {
    reads.await(started, timeout);
  }

  // ---------------------------------------------------------------- close

  /**
   * Stops the progress thread, closes every endpoint (all at once, one shared deadline),
   * deregisters and frees memory, then destroys the worker and the context. Failures are collected
   * and thrown together at the end, after everything that could be released was; if memory stayed
   * registered or the thread did not stop, the worker and context are leaked rather than destroyed
   * (UCX would abort the process).
   */
  @Override
  protected void doClose() {
    List<RuntimeException> failures = new ArrayList<>();
    boolean threadStopped = loop.stop();
    synchronized (regions.lock()) {
      workerLock.lock();
      try {
        peers.closeAll();
        boolean memoryReleased = regions.close(failures);
        if (threadStopped && memoryReleased) {
          worker.close();
          loop.markDestroyed();
          context.close();
        } else {
          failures.add(
              new TransportException(
                  null,
                  "leaked its UCX worker and context because "
                      + (threadStopped
                          ? "some memory could not be deregistered"
                          : "its progress thread did not stop")));
        }
      } finally {
        workerLock.unlock();
      }
    }
    throwCloseFailures(failures);
  }

  @Override
  public String toString() {
    return "UcxTransport[session "
        + localSession()
        + ", tls "
        + options.tls()
        + ", "
        + regions.size()
        + " regions, "
        + peers.size()
        + " peers"
        + (isClosed() ? ", closed]" : "]");
  }

  /**
   * The UCX_TLS value this endpoint applied, or null when it left UCX's own ({@code UCX_TLS} from
   * the environment).
   */
  public String transports() {
    return options.tls();
  }
}
