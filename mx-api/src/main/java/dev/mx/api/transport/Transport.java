package dev.mx.api.transport;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.List;

/**
 * One endpoint of a one-sided transport. A publisher registers the memory it serves and hands
 * {@link #localMetadata()} to receivers (through a shard table); a receiver registers its
 * destination buffers, {@link #connect connects} each peer under its session name, and issues
 * {@link #read reads}.
 *
 * <p>A transport only reads from and writes to registered memory: a descriptor outside every region
 * is rejected with an error naming it, before any byte of the batch moves. Zero-length descriptors
 * are ignored. Implementations are safe for concurrent batches. {@link #close()} is idempotent; any
 * use after it fails with a {@link dev.mx.api.error.TransportException}.
 */
public interface Transport extends AutoCloseable {

  /** The backend name, e.g. {@code mem}. */
  String name();

  /** The session (agent) name of this endpoint; reads naming it read this endpoint's own memory. */
  String localSession();

  /** Registers native memory so that peers may read it and local reads may write into it. */
  MemoryRegistration register(MemorySegment region);

  /**
   * Whether this transport reads and writes memory of {@code kind}. Host memory only, unless a
   * backend says otherwise ({@code cuda-ipc} and {@code nixl} read device memory).
   */
  default boolean supportsMemory(MemoryKind kind) {
    return !kind.isDevice();
  }

  /**
   * Whether a read of memory its owner has deregistered fails (true, the default), or may still
   * deliver whatever that memory holds (false). NIXL says false: over UCX's shared-memory, CMA and
   * TCP transports it keeps serving deregistered memory, and mx cannot tell which transport NIXL
   * picked. Over a transport that says false, deregistering is no fence: an owner must not rewrite
   * or free memory while a reader may still read it, and a reader must confirm afterwards that the
   * memory was still being served as published (the version protocol does both, docs/VERSIONS.md).
   */
  default boolean revokesDeregisteredMemory() {
    return true;
  }

  /**
   * Registers memory of {@code kind}: device memory (a segment holding only an address and a
   * length) goes to the backend as such, host memory as {@link #register(MemorySegment)}.
   *
   * @throws dev.mx.api.error.TransportException naming this transport and the kind when it cannot
   *     read memory of that kind, before anything is registered
   */
  default MemoryRegistration register(MemorySegment region, MemoryKind kind) {
    if (!supportsMemory(kind)) {
      throw MemoryKinds.unsupported(name(), region, kind);
    }
    return register(region);
  }

  /**
   * Allocates {@code bytes} of native memory already registered with this transport, for buffers
   * that do not exist yet (ModelExpress takes registered buffers from a transport-aware allocator,
   * ARCHITECTURE §7.7). A backend may serve such memory faster than memory it merely registers (ucx
   * on one host maps its own allocations into the reading process); the default allocates from an
   * {@link java.lang.foreign.Arena} and registers it. Closing the registration deregisters and
   * frees the memory: its segment is unusable afterwards.
   */
  default MemoryRegistration allocate(long bytes) {
    return ArenaAllocation.allocateAndRegister(this, bytes);
  }

  /**
   * An opaque blob a peer passes to {@link #connect} to reach this endpoint and the regions
   * registered so far (register first, then publish the blob).
   */
  byte[] localMetadata();

  /** Makes the peer described by {@code peerMetadata} reachable under {@code session}. */
  void connect(String session, byte[] peerMetadata);

  /** Whether {@code session} is this endpoint or a connected peer. */
  boolean isConnected(String session);

  /**
   * Lets reads from {@code session} go on ({@code allowed} true) after that peer exited, from its
   * memory that outlives it, as the peer left it, instead of failing for its death; false restores
   * the default. For re-reading bytes that a lease kept stable and that are checked against digests
   * the peer published while alive: a torn in-place install restored, or a rank rolled back, from
   * the previous version after one of its publishers was killed. The setting is the endpoint's, for
   * every reader of it, until cleared or the session is connected again; a region the peer had
   * deregistered still fails. Returns whether reads from the peer can outlive it here: only where
   * all of its memory does (a same-host transport maps the files its peer allocated); false, the
   * default, changes nothing: its reads keep failing for its death.
   */
  default boolean readAfterExit(String session, boolean allowed) {
    return false;
  }

  /**
   * Reads one batch, possibly spanning many peers: groups by session in first-seen order, validates
   * every group, posts every group, then awaits them all within the default timeout.
   */
  default void read(List<ReadDescriptor> batch) {
    read(batch, defaultTimeout());
  }

  /** As {@link #read(List)} with an explicit timeout. */
  void read(List<ReadDescriptor> batch, Duration timeout);

  /**
   * Posts a batch of reads from one peer without waiting (every descriptor must name {@code
   * session}). The batch is validated first; nothing moves when it is invalid. Returns null for an
   * empty batch.
   */
  PendingRead post(String session, List<ReadDescriptor> group);

  /** Waits for posted batches; on timeout or error throws, naming the peer(s) still outstanding. */
  void awaitAll(List<PendingRead> posted, Duration timeout);

  /** The timeout {@link #read(List)} uses. */
  Duration defaultTimeout();

  /**
   * What reads cost on this transport, for the planner's cost model (shard bounding); settings may
   * override it ({@link TransportCosts#withOverrides}). The default is {@link
   * TransportCosts#DEFAULT}.
   */
  default TransportCosts costs() {
    return TransportCosts.DEFAULT;
  }

  /** Counters since creation. */
  TransportStats stats();

  /** False while the last data-plane operation failed; a later success clears it. */
  boolean isHealthy();

  @Override
  void close();
}
