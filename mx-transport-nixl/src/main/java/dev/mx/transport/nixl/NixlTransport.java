package dev.mx.transport.nixl;

import dev.mx.api.annotation.Stable;
import dev.mx.api.error.TransportException;
import dev.mx.api.transport.MemoryKind;
import dev.mx.api.transport.MemoryRegistration;
import dev.mx.api.transport.PendingRead;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.api.transport.TransportConfig;
import dev.mx.api.util.Settings;
import dev.mx.transport.kit.AbstractTransport;
import dev.mx.transport.kit.CallerDrivenProgress;
import dev.mx.transport.kit.PeerMetadataCodec;
import dev.mx.transport.kit.RegionBook;
import dev.mx.transport.kit.RegionTable;
import dev.mx.transport.kit.TransportBundle;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One-sided reads through NIXL. Each endpoint is one NIXL agent named after its session, with one
 * backend (UCX unless configured otherwise); callers' native memory is registered in place, as DRAM
 * (device id 0), or as VRAM with the CUDA device ordinal when registered as {@code cuda:N} memory.
 * The blob of {@link #localMetadata()} is exactly NIXL's {@code get_local_md}, what ModelExpress
 * publishers put in a shard table's {@code agent_meta_b64}, so either side can be mx or
 * ModelExpress.
 *
 * <p>The peer's published regions live inside that blob, in NIXL's own serialization, so they are
 * checked with NIXL rather than parsed by mx: before anything is posted, every peer's source
 * descriptors go through {@code check_remote_md} against the metadata the receiver loaded (a
 * failure is narrowed down to the first descriptor at fault), and destinations are checked against
 * this endpoint's registrations. Each peer's group then becomes one READ request ({@code
 * prep_xfer_dlist} on both sides, {@code make_xfer_req}); requests are kept in a small cache keyed
 * by the exact descriptors, so the next refit with the same plan re-posts them without rebuilding
 * any list. All groups are posted, then polled with {@code get_xfer_status} until each is done or
 * the call's timeout passes; failures name the peer and NIXL's status, and a late or failed request
 * is released (aborted) so no byte lands after the call returned.
 *
 * <p>Every call into the agent is made under one lock (NIXL's own thread-sync setting is extra
 * safety). Progress comes from NIXL's progress thread with a delay (default 1 ms) so it does not
 * burn a core, or, with {@code nixl.progressThread=false}, from the waiting caller, which then also
 * drives the other agents of this JVM (within one process a transfer needs both agents driven).
 * Close order: cached requests (release, then destroy, then their prepared lists), remote metadata,
 * registrations, the backend handle, the agent.
 */
@Stable
public final class NixlTransport extends AbstractTransport implements CallerDrivenProgress {
  private static final Logger LOG = LoggerFactory.getLogger(NixlTransport.class);

  /** How long a waiting caller spins before it starts to park between polls. */
  private static final long SPIN_NANOS = 20_000;

  /** Longest park between two polls. */
  private static final long MAX_PARK_NANOS = 200_000;

  /** Endpoints of this JVM, so a caller driving progress can drive its in-process peers too. */
  private static final Set<NixlTransport> LIVE = ConcurrentHashMap.newKeySet();

  private final NixlLibrary lib;
  private final NixlOptions options;

  /** Serializes every call into the agent; taken after {@link #registry}, never before it. */
  private final ReentrantLock agentLock = new ReentrantLock();

  private final MemorySegment agent;
  private final MemorySegment backend;

  /** For caller-driven progress ({@code get_notifs}); NULL when NIXL's progress thread runs. */
  private final MemorySegment notifMap;

  /** Serializes registering and deregistering (with NIXL's registration of the memory). */
  private final Object registry = new Object();

  private final RegionBook<NixlRegistration> book = new RegionBook<>("nixl");

  /** What a registration needs of this endpoint to register and deregister itself. */
  private final NixlRegistration.Agent registrar;

  private final Map<String, Peer> peers = new ConcurrentHashMap<>();
  private long nextGeneration;

  /** Prepared READ requests for reuse (guarded by the agent lock). */
  private final NixlRequestCache cache;

  /**
   * A connected peer: its session, the NIXL agent name its metadata declared, and a connection
   * generation.
   */
  private record Peer(String session, String agentName, long generation) {}

  /** Creates an endpoint over the NIXL that {@link Nixl} found. */
  public NixlTransport(TransportConfig config) {
    this(Nixl.library(), config);
  }

  NixlTransport(NixlLibrary lib, TransportConfig config) {
    super(config);
    this.lib = Objects.requireNonNull(lib, "lib");
    try {
      this.options = NixlOptions.from(config, Settings.system());
    } catch (IllegalArgumentException e) {
      throw new TransportException(
          null,
          "nixl transport: bad configuration for endpoint '"
              + config.session()
              + "': "
              + e.getMessage(),
          e);
    }
    NixlAgentHandles handles = NixlAgentHandles.open(lib, config.session(), options);
    this.agent = handles.agent();
    this.backend = handles.backend();
    this.notifMap = handles.notifMap();
    this.cache = new NixlRequestCache(lib, agent, config.session(), options.cachedRequests());
    this.registrar =
        new NixlRegistration.Agent(lib, agent, config.session(), registry, agentLock, cache);
    LIVE.add(this);
  }

  @Override
  public String name() {
    return "nixl";
  }

  /** The backend plugin this endpoint uses (e.g. {@code UCX}). */
  public String backendName() {
    return options.backend();
  }

  /** Whether the waiting caller drives this agent (NIXL's progress thread does otherwise). */
  @Override
  public boolean needsCallerProgress() {
    return !options.progressThread();
  }

  // ---------------------------------------------------------------- registration

  /** Host memory (DRAM) and CUDA device memory (VRAM). */
  @Override
  public boolean supportsMemory(MemoryKind kind) {
    return true;
  }

  /**
   * No: a real NIXL (1.4 over UCX 1.20's shared-memory, CMA and TCP transports) keeps serving
   * memory after {@code deregister_mem}, and nothing in its metadata blob lets mx tell a backend
   * that revokes (an RDMA NIC's remote access error) from one that does not.
   */
  @Override
  public boolean revokesDeregisteredMemory() {
    return false;
  }

  @Override
  protected MemoryRegistration doRegister(MemorySegment region) {
    return register(region, MemoryKind.HOST, NixlLibrary.DRAM, 0);
  }

  /**
   * Device memory is registered as VRAM with its device ordinal (NIXL's descriptor for GPU memory).
   */
  @Override
  protected MemoryRegistration doRegister(MemorySegment region, MemoryKind kind) {
    return register(region, kind, NixlLibrary.VRAM, kind.ordinal());
  }

  private MemoryRegistration register(
      MemorySegment region, MemoryKind kind, int memType, long devId) {
    synchronized (registry) {
      return book.add(
          region,
          id -> {
            agentLock.lock();
            try {
              ensureOpen();
              return NixlRegistration.register(registrar, book, id, region, kind, memType, devId);
            } finally {
              agentLock.unlock();
            }
          });
    }
  }

  // ---------------------------------------------------------------- metadata

  @Override
  public byte[] localMetadata() {
    ensureOpen();
    agentLock.lock();
    try {
      ensureOpen();
      return lib.getLocalMd(agent);
    } catch (NixlStatusException e) {
      throw new TransportException(
          null,
          "nixl transport: agent '"
              + localSession()
              + "' could not give its metadata: "
              + e.getMessage(),
          e);
    } finally {
      agentLock.unlock();
    }
  }

  /**
   * NIXL's metadata is its agent's own blob, which NIXL loads and checks reads against itself: it
   * decodes as it is and publishes no regions for mx to index.
   */
  private static final PeerMetadataCodec<byte[]> CODEC =
      PeerMetadataCodec.of((session, blob) -> blob, blob -> List.of());

  @Override
  public void connect(String session, byte[] peerMetadata) {
    ensureOpen();
    Objects.requireNonNull(session, "session");
    Objects.requireNonNull(peerMetadata, "peerMetadata");
    if (session.equals(localSession())) {
      return; // reads naming this endpoint are local; NIXL refuses to load an agent's own metadata
    }
    // A publisher serving several transports hands out a bundle: take NIXL's own blob out of it.
    byte[] blob =
        decodePeer(session, TransportBundle.forTransport(session, name(), peerMetadata), CODEC)
            .metadata();
    agentLock.lock();
    try {
      ensureOpen();
      Peer old = peers.remove(session);
      if (old != null) {
        cache.evict(p -> p.key.agentName.equals(old.agentName));
        int st = lib.invalidateRemoteMd(agent, old.agentName);
        if (st != NixlStatus.SUCCESS) {
          LOG.debug(
              "invalidating the metadata of peer '{}' (agent '{}') before reloading it: {}",
              session,
              old.agentName,
              NixlStatus.describe(st));
        }
      }
      String name;
      try {
        name = lib.loadRemoteMd(agent, blob);
      } catch (NixlStatusException e) {
        throw new TransportException(
            session,
            "nixl transport: the metadata for peer '"
                + session
                + "' ("
                + blob.length
                + " bytes) is not NIXL agent metadata agent '"
                + localSession()
                + "' can load: "
                + e.getMessage(),
            e);
      }
      if (!name.equals(session)) {
        LOG.debug("peer '{}' is NIXL agent '{}'", session, name);
      }
      peers.put(session, new Peer(session, name, nextGeneration++));
    } finally {
      agentLock.unlock();
    }
  }

  @Override
  public boolean isConnected(String session) {
    return session.equals(localSession()) || peers.containsKey(session);
  }

  // ---------------------------------------------------------------- reads

  @Override
  protected PendingRead prepare(String session, List<ReadDescriptor> group) {
    boolean self = session.equals(localSession());
    Peer peer = self ? null : peers.get(session);
    if (!self && peer == null) {
      throw unknownPeer(session);
    }
    String agentName = self ? localSession() : peer.agentName();
    int n = group.size();
    long[] src = new long[n];
    long[] dst = new long[n];
    long[] len = new long[n];
    long total = 0;
    RegionBook.Snapshot<NixlRegistration> registered = book.snapshot();
    RegionTable local = registered.table();
    MemoryKind kind = null;
    for (int i = 0; i < n; i++) {
      ReadDescriptor d = group.get(i);
      int region = local.find(d.dstAddr(), d.nbytes());
      if (region < 0) {
        throw destinationOutsideRegions(i, d, local);
      }
      // One NIXL transfer list has one memory type: a group lands in memory of one kind.
      MemoryKind k = registered.get(region).memoryKind();
      if (kind == null) {
        kind = k;
      } else if (!kind.equals(k)) {
        throw new TransportException(
            session,
            "nixl transport: descriptor #"
                + i
                + " "
                + d
                + " writes "
                + k
                + " memory while earlier reads from peer '"
                + session
                + "' in this batch write "
                + kind
                + " memory; one"
                + " NIXL request moves memory of one type; nothing in this batch was read");
      }
      if (self && local.find(d.srcAddr(), d.nbytes()) < 0) {
        throw sourceOutsideRegions(i, d, local);
      }
      src[i] = d.srcAddr();
      dst[i] = d.dstAddr();
      len[i] = d.nbytes();
      total += d.nbytes();
    }
    boolean device = kind != null && kind.isDevice();
    NixlRequestKey key =
        new NixlRequestKey(
            agentName,
            self ? -1 : peer.generation(),
            src,
            dst,
            len,
            device ? NixlLibrary.VRAM : NixlLibrary.DRAM,
            device ? kind.ordinal() : 0);
    agentLock.lock();
    try {
      ensureOpen();
      NixlRequest p = cache.get(key);
      if (p != null && !p.inUse) {
        p.inUse = true;
      } else {
        // Not cached, or another thread's batch is using the cached one: build another.
        p = NixlRequest.build(lib, agent, key, session, group, self);
        p.inUse = true;
        cache.offer(p);
      }
      return new NixlBatch(session, agentName, p, n, total);
    } finally {
      agentLock.unlock();
    }
  }

  @Override
  protected void start(PendingRead prepared) {
    NixlBatch b = (NixlBatch) prepared;
    int st;
    agentLock.lock();
    try {
      ensureOpen();
      st = lib.postXferReq(agent, b.prepared.req);
      if (st == NixlStatus.SUCCESS) {
        b.done = true;
      }
      if (st != NixlStatus.SUCCESS && st != NixlStatus.IN_PROG) {
        b.status = st;
        cache.discard(b.prepared);
      }
    } finally {
      agentLock.unlock();
    }
    if (st != NixlStatus.SUCCESS && st != NixlStatus.IN_PROG) {
      throw new TransportException(
          b.session,
          "nixl transport: posting "
              + b.describeBatch()
              + " failed: post_xfer_req returned "
              + NixlStatus.describe(st));
    }
  }

  @Override
  protected void await(List<PendingRead> started, Duration timeout) {
    List<NixlBatch> batches = new ArrayList<>(started.size());
    for (PendingRead p : started) {
      batches.add((NixlBatch) p);
    }
    long deadline = System.nanoTime() + timeout.toNanos();
    long waitingSince = System.nanoTime();
    long park = 1_000;
    boolean closedMeanwhile = false;
    try {
      while (true) {
        boolean pending = false;
        agentLock.lock();
        try {
          if (isClosed()) {
            closedMeanwhile = true;
            break;
          }
          if (!options.progressThread()) {
            driveProgress();
          }
          for (NixlBatch b : batches) {
            if (b.done || b.status != NixlStatus.IN_PROG) {
              continue;
            }
            int st = lib.getXferStatus(agent, b.prepared.req);
            if (st == NixlStatus.SUCCESS) {
              b.done = true;
            } else if (st == NixlStatus.IN_PROG) {
              pending = true;
            } else {
              b.status = st;
              b.failedCall = "get_xfer_status";
            }
          }
        } finally {
          agentLock.unlock();
        }
        long now = System.nanoTime();
        if (!pending || now - deadline >= 0) {
          break;
        }
        if (now - waitingSince < SPIN_NANOS) {
          Thread.onSpinWait();
        } else {
          LockSupport.parkNanos(Math.min(park, deadline - now));
          park = Math.min(park * 2, MAX_PARK_NANOS);
        }
      }
    } finally {
      finish(batches);
    }
    NixlBatch.throwIfFailed(batches, timeout, closedMeanwhile);
  }

  /** Returns finished requests to the cache; releases (aborts) late and failed ones. */
  private void finish(List<NixlBatch> batches) {
    agentLock.lock();
    try {
      for (NixlBatch b : batches) {
        NixlRequest p = b.prepared;
        if (isClosed()) {
          continue; // close released everything
        }
        if (b.done) {
          p.inUse = false;
          if (!p.cached) {
            cache.free(p);
          }
        } else {
          cache.discard(p);
        }
      }
    } finally {
      agentLock.unlock();
    }
  }

  /**
   * Drives this agent's backend once when it has no progress thread (a no-op otherwise). A
   * caller-driven publisher must be driven while receivers read from it (over TCP a read needs the
   * target's progress).
   */
  @Override
  public void progress() {
    if (options.progressThread()) {
      return;
    }
    agentLock.lock();
    try {
      ensureOpen();
      lib.getNotifs(agent, notifMap);
    } finally {
      agentLock.unlock();
    }
  }

  /**
   * One round of caller-driven progress: this agent, and the other caller-driven agents of this
   * JVM.
   */
  private void driveProgress() {
    lib.getNotifs(agent, notifMap);
    for (NixlTransport t : LIVE) {
      if (t != this && !t.options.progressThread() && t.agentLock.tryLock()) {
        try {
          if (!t.isClosed()) {
            t.lib.getNotifs(t.agent, t.notifMap);
          }
        } finally {
          t.agentLock.unlock();
        }
      }
    }
  }

  // ---------------------------------------------------------------- close

  @Override
  protected void doClose() {
    LIVE.remove(this);
    List<String> failures = new ArrayList<>();
    synchronized (registry) {
      agentLock.lock();
      try {
        int unreleased = cache.freeAll();
        if (unreleased > 0) {
          failures.add(unreleased + " transfer request(s) could not be released");
        }
        for (Peer p : peers.values()) {
          // A peer whose agent is gone cannot be disconnected cleanly (NIXL 1.4's UCX backend
          // answers ERROR_BACKEND); destroying this agent below frees its state all the same, so
          // that is no failure of this close.
          int st = lib.invalidateRemoteMd(agent, p.agentName());
          if (st != NixlStatus.SUCCESS) {
            LOG.debug(
                "closing agent '{}': invalidating the metadata of peer '{}' (agent '{}'): {}",
                localSession(),
                p.session(),
                p.agentName(),
                NixlStatus.describe(st));
          }
        }
        peers.clear();
        for (NixlRegistration r : book.all()) {
          if (r.isReleased()) {
            continue;
          }
          r.releaseWithEndpoint();
          if (r.releaseStatus != NixlStatus.SUCCESS) {
            failures.add(
                "deregister_mem("
                    + describe(r.segment().address(), r.segment().byteSize())
                    + ") returned "
                    + NixlStatus.describe(r.releaseStatus));
          }
        }
        book.clear();
        if (!notifMap.equals(MemorySegment.NULL)) {
          lib.destroyNotifMap(notifMap);
        }
        int st = lib.destroyBackend(backend);
        if (st != NixlStatus.SUCCESS) {
          failures.add("destroy_backend returned " + NixlStatus.describe(st));
        }
        st = lib.destroyAgent(agent);
        if (st != NixlStatus.SUCCESS) {
          failures.add("destroy_agent returned " + NixlStatus.describe(st));
        }
      } finally {
        agentLock.unlock();
      }
    }
    if (!failures.isEmpty()) {
      throw new TransportException(
          null,
          "nixl transport: closing agent '"
              + localSession()
              + "' met "
              + failures.size()
              + " problem(s): "
              + String.join("; ", failures));
    }
  }

  private static String describe(long base, long length) {
    return "0x" + Long.toHexString(base) + "+" + length;
  }

  /** Prepared requests held for reuse (for tests and diagnostics). */
  int cachedRequests() {
    agentLock.lock();
    try {
      return cache.size();
    } finally {
      agentLock.unlock();
    }
  }

  @Override
  public String toString() {
    return "NixlTransport[session "
        + localSession()
        + ", backend "
        + options.backend()
        + ", "
        + book.size()
        + " regions, "
        + peers.size()
        + " peers"
        + (isClosed() ? ", closed]" : "]");
  }
}
