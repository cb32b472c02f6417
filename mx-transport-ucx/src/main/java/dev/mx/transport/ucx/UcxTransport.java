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
import dev.mx.transport.kit.LocalCopy;
import dev.mx.transport.kit.PeerMetadataCodec;
import dev.mx.transport.kit.RegionBook;
import dev.mx.transport.kit.RegionDirectory;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import org.openucx.jucx.ucp.UcpContext;
import org.openucx.jucx.ucp.UcpEndpoint;
import org.openucx.jucx.ucp.UcpMemMapParams;
import org.openucx.jucx.ucp.UcpMemory;
import org.openucx.jucx.ucp.UcpParams;
import org.openucx.jucx.ucp.UcpRequest;
import org.openucx.jucx.ucp.UcpWorker;
import org.openucx.jucx.ucp.UcpWorkerParams;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

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
 * <p>Split the way Netty splits a native transport: this class holds the endpoint and the read
 * path; {@link UcxRegistration} a registered region, {@link UcxPeer} a connected peer, {@link
 * UcxConnection} one UCX endpoint to it, {@link UcxBatch} one peer's reads of a call. What every
 * backend shares (grouping, validation before any byte moves, own-session copies, the live-region
 * directory) comes from mx-api.
 */
@SuppressWarnings("restricted") // calling native code is what this class is for
@Stable
public final class UcxTransport extends AbstractTransport {
  private static final Logger LOG = LoggerFactory.getLogger(UcxTransport.class);

  /**
   * While issuing, progress the worker once per this many requests, so the peer starts serving
   * early.
   */
  private static final int PROGRESS_EVERY_REQUESTS = 64;

  /** ... or once per this many bytes requested. */
  private static final long PROGRESS_EVERY_BYTES = 8L << 20;

  /**
   * Longest single sleep on the event fd while a call waits (bounds the cost of a missed wake-up).
   */
  private static final long MAX_SLEEP_NANOS = 2_000_000;

  /** How long a graceful endpoint close may take before it is abandoned. */
  private static final long CLOSE_WAIT_NANOS = 2_000_000_000L;

  private final UcxOptions options;

  /** What this endpoint's peers and connections use of it. */
  private final UcxLocal local;

  private final UcpContext context;
  private final UcpWorker worker;
  private final UcxWorkerLoop loop;
  private final ReentrantLock workerLock;
  private final RegionDirectory directory;
  private final UcpMemory directoryMemory;

  /** The arena the directory's segment is bound to, closed before UCX frees the memory. */
  private final Arena directoryArena;

  private final byte[] directoryRkey;
  private final byte[] workerAddress;

  /**
   * Serializes registering, deregistering and publishing the registrations (with their directory
   * slots and UCX mappings); taken before the worker lock, never after it.
   */
  private final Object registry = new Object();

  private final RegionBook<UcxRegistration> book;

  /** Allocations whose registrations closed, freed after a grace (guarded by the registry). */
  private final UcxQuarantine quarantine = new UcxQuarantine(this::unmap);

  private final Map<String, UcxPeer> peers = new ConcurrentHashMap<>();

  /** Batches waiting for their peer's replies, by token ({@link UcxServe}). */
  private final Map<Long, UcxBatch> awaiting = new ConcurrentHashMap<>();

  private final AtomicLong nextToken = new AtomicLong(1);

  @SuppressWarnings("MustBeClosedChecker") // the directory arena is a field, closed by close()
  UcxTransport(TransportConfig config) {
    super(config);
    Ucx.ensureAvailability();
    this.book = new RegionBook<>("ucx", config.session());
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
    RegionDirectory dir = null;
    UcpMemory dirMem = null;
    Arena dirArena = null;
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
      // The directory lives in memory UCX allocates: on one host a receiver's probe is then a plain
      // copy.
      long dirBytes = RegionDirectory.bytesFor(opts.maxRegions());
      dirMem = ctx.memoryMap(new UcpMemMapParams().allocate().setLength(dirBytes));
      opened.add(dirMem::deregister);
      dirArena = Arena.ofShared();
      opened.add(dirArena);
      dir =
          new RegionDirectory(
              MemorySegment.ofAddress(dirMem.getAddress()).reinterpret(dirBytes, dirArena, null));
      this.directoryRkey = bytes(dirMem.getRemoteKeyBuffer());
      this.workerAddress = bytes(w.getAddress());
      // Handlers (answering peers' reads, dispatching replies to ours) before the progress thread
      // starts, so
      // no request finds the worker without them.
      new UcxServe(config.session(), book::snapshot, w, awaiting);
      this.loop = new UcxWorkerLoop(w, config.session());
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
    this.local = new UcxLocal(config.session(), w, opts.peerErrorHandling(), this::awaitClosed);
    this.directory = dir;
    this.directoryMemory = dirMem;
    this.directoryArena = dirArena;
    this.workerLock = loop.lock();
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
    return registerRegion(region, null, null);
  }

  /**
   * Memory UCX allocates ({@code ucp_mem_map} with {@code UCP_MEM_MAP_ALLOCATE}) and registers.
   * With shared memory transports it lives in a segment a reader on the same host maps and copies
   * from directly, the path ucx_perftest measures, instead of GETs UCX 1.13 emulates for memory it
   * merely registered. Closing the registration makes the segment unusable at once (it is bound to
   * an arena closed then); UCX frees the memory a few seconds later (see {@link UcxQuarantine}).
   */
  @Override
  @SuppressWarnings(
      "MustBeClosedChecker") // the registration owns the arena; closing it closes the arena
  public MemoryRegistration allocate(long bytes) {
    checkAllocation(bytes);
    UcpMemory memory;
    workerLock.lock();
    try {
      ensureOpen();
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
        "ucx transport: "
            + what
            + " on endpoint '"
            + localSession()
            + "' failed: "
            + e.getMessage(),
        e);
  }

  /**
   * Registers a region: maps it with UCX unless {@code mapped} already is its mapping, claims a
   * directory slot, and publishes it in the local table. {@code owner}, when given, is closed on
   * deregistration.
   */
  private MemoryRegistration registerRegion(MemorySegment region, UcpMemory mapped, Arena owner) {
    synchronized (registry) {
      ensureOpen();
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
              + localSession()
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

  @Override
  public byte[] localMetadata() {
    ensureOpen();
    List<UcxPeerMetadata.Region> regions = new ArrayList<>();
    synchronized (registry) {
      for (UcxRegistration r : book.all()) {
        regions.add(
            new UcxPeerMetadata.Region(
                r.segment().address(), r.segment().byteSize(), r.slot, r.cookie, r.rkey));
      }
    }
    return new UcxPeerMetadata(
            workerAddress,
            directory.segment().address(),
            directory.capacity(),
            directoryRkey,
            regions)
        .encode();
  }

  // ---------------------------------------------------------------- peers

  @Override
  public void connect(String session, byte[] metadata) {
    byte[] blob = peerBlob(session, metadata);
    PeerMetadataCodec.Decoded<UcxPeerMetadata> decoded =
        decodePeer(session, blob, UcxPeerMetadata.CODEC);
    UcxPeer peer = new UcxPeer(local, session, decoded.metadata(), decoded.regions());
    workerLock.lock();
    try {
      ensureOpen();
      peer.open();
      UcxPeer old = peers.put(session, peer);
      if (old != null) {
        old.retire();
      }
    } finally {
      workerLock.unlock();
    }
  }

  @Override
  public boolean isConnected(String session) {
    return session.equals(localSession()) || peers.containsKey(session);
  }

  /**
   * Progresses until every close request completed or {@link #CLOSE_WAIT_NANOS} passed; endpoints
   * still closing then are abandoned (the worker's destruction reclaims them). Worker lock held.
   */
  void awaitClosed(List<UcxConnection> connections, UcpRequest... requests) {
    long deadline = System.nanoTime() + CLOSE_WAIT_NANOS;
    for (int i = 0; i < requests.length; i++) {
      while (requests[i] != null && !requests[i].isCompleted() && System.nanoTime() < deadline) {
        loop.progressLocked();
      }
      if (requests[i] != null && !requests[i].isCompleted()) {
        LOG.warn(
            "ucx endpoint to peer '{}' did not close within {} ms; abandoning it",
            connections.get(i).peer.session,
            CLOSE_WAIT_NANOS / 1_000_000);
      }
    }
  }

  // ---------------------------------------------------------------- batches

  @Override
  protected PendingRead prepare(String session, List<ReadDescriptor> group) {
    RegionBook.Snapshot<UcxRegistration> to = book.snapshot();
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

  /**
   * Connects (if needed) and issues the batch's probe: one request per region the batch reads,
   * which the peer answers saying whether the region is still registered.
   */
  @Override
  protected void start(PendingRead prepared) {
    if (!(prepared instanceof UcxBatch b)) {
      return; // local copies happen in await(), once every peer of the call has been checked
    }
    workerLock.lock();
    try {
      ensureOpen();
      UcxConnection c = b.peer.acquire();
      b.connection = c;
      try {
        if (c.failure != null) {
          throw new IllegalStateException(c.failure);
        }
        int regions = 0;
        for (boolean used : b.regionUsed) {
          regions += used ? 1 : 0;
        }
        b.token = nextToken.getAndIncrement();
        b.headers = Arena.ofAuto().allocate((long) regions * UcxServe.REQUEST_BYTES, 8);
        b.probe = new UcxBatch.Flush(regions);
        awaiting.put(b.token, b);
        int i = 0;
        for (int r = 0; r < b.regionUsed.length; r++) {
          if (b.regionUsed[r]) {
            UcxPeerMetadata.Region region = b.peer.meta.regions().get(r);
            UcxServe.writeRequest(
                b.headers,
                i,
                b.token,
                -1 - r,
                region.slot(),
                region.cookie(),
                region.base(),
                region.length());
            UcxServe.send(c.endpoint, b.headers, i++);
          }
        }
      } catch (RuntimeException e) {
        String why = "starting reads failed: " + e.getMessage();
        b.peer.breakConnection(c, why);
        finish(b);
        throw new TransportException(
            b.session(), "ucx transport: peer '" + b.session() + "': " + why, e);
      }
    } finally {
      workerLock.unlock();
    }
  }

  /**
   * Waits for every probe, rejects the whole call (before any data moves) when a peer failed or a
   * region was deregistered, copies local batches, sends every peer's data requests, and waits for
   * them; all within {@code timeout}.
   */
  @Override
  protected void await(List<PendingRead> started, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    List<UcxBatch> remote = new ArrayList<>(started.size());
    List<LocalCopy> locals = new ArrayList<>();
    for (PendingRead p : started) {
      if (p instanceof UcxBatch b) {
        remote.add(b);
      } else {
        locals.add((LocalCopy) p);
      }
    }
    try {
      waitForPhase(remote, deadline);
      UcxBatch.throwIfFailed(remote, timeout, workerLock, isClosed());
      for (UcxBatch b : remote) {
        b.checkStillPublished();
      }
      for (LocalCopy b : locals) {
        b.copy();
      }
      for (UcxBatch b : remote) {
        issueData(b);
      }
      waitForPhase(remote, deadline);
      UcxBatch.throwIfFailed(remote, timeout, workerLock, isClosed());
    } finally {
      finishAll(remote);
    }
  }

  /** Issues one read request per descriptor of the batch; the peer answers each with its bytes. */
  private void issueData(UcxBatch b) {
    workerLock.lock();
    try {
      ensureOpen();
      UcxConnection c = b.connection;
      b.data = new UcxBatch.Flush(b.len.length);
      try {
        if (c.failure != null || c.closed) {
          throw new IllegalStateException(
              c.failure != null ? c.failure : "its endpoint was closed");
        }
        UcpEndpoint ep = c.endpoint;
        b.headers = Arena.ofAuto().allocate((long) b.len.length * UcxServe.REQUEST_BYTES, 8);
        long sinceProgress = 0;
        for (int i = 0; i < b.len.length; i++) {
          int r = b.region[i];
          UcxServe.writeRequest(
              b.headers, i, b.token, i, b.peer.slots[r], b.peer.cookies[r], b.src[i], b.len[i]);
          UcxServe.send(ep, b.headers, i);
          sinceProgress += b.len[i];
          if ((i + 1) % PROGRESS_EVERY_REQUESTS == 0 || sinceProgress >= PROGRESS_EVERY_BYTES) {
            loop.progressLocked();
            sinceProgress = 0;
          }
        }
      } catch (RuntimeException e) {
        b.data.fail("issuing " + b.len.length + " reads failed: " + e.getMessage());
      }
    } finally {
      workerLock.unlock();
    }
  }

  /**
   * Progresses the worker until every batch's current phase finished or the deadline passed,
   * sleeping on the worker's event fd whenever a spell of progress calls found nothing to do.
   */
  private void waitForPhase(List<UcxBatch> batches, long deadline) {
    if (batches.isEmpty()) {
      return;
    }
    loop.enterCaller();
    try {
      long idleSince = -1;
      while (true) {
        boolean progressed = loop.progress(16);
        workerLock.lock();
        try {
          for (UcxBatch b : batches) {
            b.pollReceives();
          }
        } finally {
          workerLock.unlock();
        }
        boolean allDone = true;
        for (UcxBatch b : batches) {
          allDone &= b.settled();
        }
        long now = System.nanoTime();
        long left = deadline - now;
        if (allDone || left <= 0 || isClosed()) {
          return;
        }
        if (progressed) {
          idleSince = -1;
        } else if (idleSince < 0 || now - idleSince < UcxWorkerLoop.SPIN_NANOS) {
          idleSince = idleSince < 0 ? now : idleSince;
          Thread.onSpinWait();
        } else {
          loop.waitForEvents(Duration.ofNanos(Math.min(left, MAX_SLEEP_NANOS)));
          idleSince = -1;
        }
      }
    } finally {
      loop.exitCaller();
    }
  }

  /** Releases every batch's connection and probe memory. */
  private void finishAll(List<UcxBatch> batches) {
    workerLock.lock();
    try {
      for (UcxBatch b : batches) {
        if (!b.settled()) {
          // Still outstanding (the call is failing for another reason): nothing may land later.
          b.peer.breakConnection(b.connection, "the read was abandoned");
        }
        finish(b);
      }
    } finally {
      workerLock.unlock();
    }
  }

  /** Stops dispatching replies to the batch and releases its connection. Lock held. */
  private void finish(UcxBatch b) {
    awaiting.remove(b.token);
    if (b.connection != null) {
      b.connection.release();
      b.connection = null;
    }
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
    boolean memoryReleased = true;
    synchronized (registry) {
      workerLock.lock();
      try {
        List<UcxConnection> closing = new ArrayList<>();
        List<UcpRequest> requests = new ArrayList<>();
        for (UcxPeer p : peers.values()) {
          if (p.connection != null) {
            closing.add(p.connection);
            requests.add(p.connection.beginClose(false));
            p.connection = null;
          }
        }
        peers.clear();
        awaitClosed(closing, requests.toArray(UcpRequest[]::new));
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

  // ---------------------------------------------------------------- helpers

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

  private static byte[] bytes(ByteBuffer b) {
    ByteBuffer d = b.duplicate();
    d.clear();
    byte[] out = new byte[d.remaining()];
    d.get(out);
    return out;
  }

  private static String describe(long base, long length) {
    return "0x" + Long.toHexString(base) + "+" + length;
  }

  @Override
  public String toString() {
    return "UcxTransport[session "
        + localSession()
        + ", tls "
        + options.tls()
        + ", "
        + book.size()
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
