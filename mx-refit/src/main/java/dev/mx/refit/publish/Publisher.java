package dev.mx.refit.publish;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.annotation.Stable;
import dev.mx.api.digest.DigestProvider;
import dev.mx.api.digest.TileDigests;
import dev.mx.api.error.NoProviderException;
import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.PublishedShard;
import dev.mx.api.metadata.PublishedTensor;
import dev.mx.api.metadata.PublisherTopology;
import dev.mx.api.metadata.ReplicaShard;
import dev.mx.api.metadata.ShardTable;
import dev.mx.api.metadata.SourceRecord;
import dev.mx.api.metadata.SourceStatus;
import dev.mx.api.spi.ProviderRegistry;
import dev.mx.api.transport.MemoryRegistration;
import dev.mx.api.transport.Transport;
import dev.mx.api.util.Closeables;
import dev.mx.api.util.Settings;
import dev.mx.metadata.Liveness;
import dev.mx.metadata.ShardTableCodec;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The trainer side of a refit (ModelExpress; ARCHITECTURE §7.5): serves named tensor shards from
 * native memory.
 *
 * <p>{@link Builder#start()} registers the memory with the transport, computes each shard's digest
 * (on by default; {@code -Dmx.publish.digest=false} or {@code MX_RESHARD_PUBLISH_DIGEST=0} turns it
 * off), publishes the shard table ({@code agent_name} = the transport's session, {@code
 * agent_meta_b64} = its {@link Transport#localMetadata()}, {@code publisher_step} = the step) and
 * heartbeats at once, then every {@code MX_HEARTBEAT_INTERVAL_S} (30 s) on a daemon thread. A
 * heartbeat says READY while the transport is healthy and STALE while it reports an error, so
 * receivers stop choosing a publisher that cannot serve. After the trainer wrote new weights into
 * the same memory, {@link #republish(long)} recomputes the digests and publishes the table with the
 * new step.
 *
 * <p>The memory must stay alive and unchanged while receivers read it; the caller owns it, the
 * transport and the store. {@link #close()} stops the heartbeats, marks the source STALE (best
 * effort) and only then deregisters the memory, in reverse order; it is idempotent.
 */
@Stable
public final class Publisher implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(Publisher.class);

  /**
   * System property setting the tile of the per-shard tile digests (bytes; 0 publishes none). The
   * default, 64 KiB, bounds what a receiver reading a shard in part pulls beyond its bytes to two
   * tiles per shard (128 KiB), while the digests add 34 table bytes per tile (0.05 % of the
   * weights).
   */
  public static final String TILE_BYTES_PROPERTY = PublisherSetting.TILE_BYTES.property();

  /** Environment variable setting the tile bytes when the property is unset. */
  public static final String TILE_BYTES_ENV = PublisherSetting.TILE_BYTES.env();

  /** Default tile of the tile digests. */
  public static final int DEFAULT_TILE_BYTES =
      Integer.parseInt(PublisherSetting.TILE_BYTES.defaultValue());

  /** System property switching shard digests (default on). */
  public static final String DIGEST_PROPERTY = PublisherSetting.DIGEST.property();

  /** Environment variable switching shard digests when the property is unset. */
  public static final String DIGEST_ENV = PublisherSetting.DIGEST.env();

  private final Transport transport;
  private final MetadataStore store;
  private final String identity;
  private final String workerId;
  private final int rank;
  private final PublisherTopology topology;
  private final String metadataEndpoint;
  private final int deviceId;
  private final List<PublishedRegion> regions;
  private final List<MemoryRegistration> registrations;
  private final DigestProvider digests;
  private final ShardTableCodec codec = ShardTableCodec.standard();
  private final Object lock = new Object();
  private final AtomicBoolean closed = new AtomicBoolean();
  private ScheduledExecutorService heartbeats;
  private volatile ShardTable table;
  private volatile byte[] blob;
  private final TileLayout tileLayout;
  private volatile SourceStatus lastStatus;
  private boolean heartbeatFailing;
  private final DigestListener digestListener;

  /** Where each shard's last-changed step is kept; null publishes none. */
  private final ChangeLog changes;

  /** Told after each shard's digests were computed, so a waiter sees a long digest progress. */
  @FunctionalInterface
  public interface DigestListener {
    /** {@code done} of {@code total} shards of this table are digested. */
    void digested(int done, int total);
  }

  /** Set by {@link #withdraw()}: from then on the source only ever says STALE. */
  private volatile boolean withdrawn;

  private Publisher(Builder b, List<MemoryRegistration> registrations, DigestProvider digests) {
    this.transport = b.transport;
    this.store = b.store;
    this.identity = b.identity;
    this.workerId = b.workerId;
    this.rank = b.rank;
    this.topology =
        b.topologyLayout == null
            ? null
            : new PublisherTopology(b.rank, b.topologyWorld, b.topologyLayout);
    this.metadataEndpoint = b.metadataEndpoint;
    this.deviceId = b.deviceId;
    this.regions = List.copyOf(b.regions);
    this.registrations = registrations;
    this.digests = digests;
    this.tileLayout = b.tileLayout();
    this.digestListener = b.digestListener;
    this.changes = b.changes;
  }

  /**
   * A builder of a publisher serving through {@code transport} and announcing itself in {@code
   * store}.
   */
  public static Builder builder(Transport transport, MetadataStore store) {
    return new Builder(transport, store);
  }

  public String identity() {
    return identity;
  }

  public String workerId() {
    return workerId;
  }

  public int rank() {
    return rank;
  }

  /** The table published last. */
  public ShardTable table() {
    return table;
  }

  /** The status the last heartbeat sent, or null before the first. */
  public SourceStatus lastStatus() {
    return lastStatus;
  }

  /** Whether shard digests are computed. */
  public boolean digestsEnabled() {
    return digests != null;
  }

  /**
   * Publishes the table again for training step {@code step}, after the trainer wrote new weights
   * into the same memory: digests are recomputed, the record replaced, and a heartbeat sent at
   * once.
   */
  public void republish(long step) {
    ensureOpen();
    synchronized (lock) {
      publish(step);
      heartbeatLocked();
    }
  }

  /**
   * Sends one heartbeat now: READY while the transport is healthy, STALE otherwise. When the store
   * lost the record (a restarted Redis, an expired key) the table is published again first.
   *
   * @return the status sent
   */
  public SourceStatus heartbeatNow() {
    ensureOpen();
    synchronized (lock) {
      return heartbeatLocked();
    }
  }

  private void publish(Long step) {
    List<ReplicaShard> replicas = new ArrayList<>();
    List<PublishedTensor> tensors = buildTensors(step, replicas);
    ShardTable t =
        new ShardTable(
            transport.localSession(),
            metadataEndpoint,
            transport.localMetadata(),
            tensors,
            step,
            topology,
            replicas);
    byte[] encoded = codec.encode(t);
    store.publish(new SourceRecord(identity, workerId, rank, encoded, announced(), 0));
    table = t;
    blob = encoded;
  }

  /** The tensors this publisher owns boxes of; its replicas go to {@code replicas}, in order. */
  private List<PublishedTensor> buildTensors(Long step, List<ReplicaShard> replicas) {
    Map<String, List<PublishedShard>> shards = new LinkedHashMap<>();
    Map<String, PublishedRegion> first = new LinkedHashMap<>();
    int done = 0;
    for (PublishedRegion r : regions) {
      String digest = digests == null ? null : digests.digest(r.bytes());
      // Right after the whole-shard digest, while the shard's bytes are still warm in cache; a
      // replica gets none (read with its owner's).
      TileDigests tileDigests =
          digests == null || r.replica()
              ? null
              : tileLayout.digest(
                  digests, r.bytes(), r.shape(), r.globalShape(), r.dtype().elementSize());
      if (digests != null) {
        digestListener.digested(++done, regions.size());
      }
      PublishedShard shard =
          new PublishedShard(
              transport.localSession(),
              deviceId,
              r.bytes().address(),
              r.shardOffset(),
              r.shape(),
              digest,
              tileDigests,
              changes == null || digest == null || step == null
                  ? null
                  : changes.observe(r.name(), r.shardOffset(), digest, step));
      if (r.replica()) {
        // Listed apart and compact: its tensor's entry is the owner's.
        replicas.add(new ReplicaShard(r.name(), shard));
        continue;
      }
      first.putIfAbsent(r.name(), r);
      shards.computeIfAbsent(r.name(), n -> new ArrayList<>()).add(shard);
    }
    List<PublishedTensor> tensors = new ArrayList<>(shards.size());
    shards.forEach(
        (name, list) -> {
          PublishedRegion r = first.get(name);
          tensors.add(
              new PublishedTensor(
                  name, r.dtype().torchLabel(), r.dtype().elementSize(), r.globalShape(), list));
        });
    return tensors;
  }

  /** The status a publication announces: READY unless {@link #withdraw() withdrawn}. */
  private SourceStatus announced() {
    return withdrawn ? SourceStatus.STALE : SourceStatus.READY;
  }

  private SourceStatus heartbeatLocked() {
    SourceStatus status =
        !withdrawn && transport.isHealthy() ? SourceStatus.READY : SourceStatus.STALE;
    try {
      store.heartbeat(identity, workerId, status);
    } catch (RuntimeException first) {
      // The store may have forgotten us (restart, expiry): announce the table again, then
      // heartbeat.
      try {
        store.publish(new SourceRecord(identity, workerId, rank, blob, announced(), 0));
        store.heartbeat(identity, workerId, status);
      } catch (RuntimeException again) {
        again.addSuppressed(first);
        throw again;
      }
      LOG.info(
          "publisher {} of '{}' re-published its table after a heartbeat failed: {}",
          workerId,
          identity,
          first.toString());
    }
    if (status != lastStatus && lastStatus != null) {
      LOG.warn(
          "publisher {} of '{}' now heartbeats {} (transport {} healthy: {})",
          workerId,
          identity,
          status,
          transport.name(),
          status == SourceStatus.READY);
    }
    lastStatus = status;
    return status;
  }

  /** The daemon thread's tick: never throws, logs the first failure of a streak loudly. */
  private void heartbeatTick() {
    try {
      heartbeatNow();
      if (heartbeatFailing) {
        LOG.info(
            "publisher {} of '{}': heartbeats reach {} again", workerId, identity, store.uri());
      }
      heartbeatFailing = false;
    } catch (RuntimeException e) {
      if (closed.get()) {
        return;
      }
      if (!heartbeatFailing) {
        LOG.warn(
            "publisher {} of '{}': heartbeat to {} failed, retrying every interval: {}",
            workerId,
            identity,
            store.uri(),
            e.toString());
      } else {
        LOG.debug("publisher {}: heartbeat failed again", workerId, e);
      }
      heartbeatFailing = true;
    }
  }

  private void startHeartbeats(Duration interval) {
    heartbeats =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "mx-publisher-heartbeat-" + workerId);
              t.setDaemon(true);
              return t;
            });
    long nanos = interval.toNanos();
    heartbeats.scheduleWithFixedDelay(this::heartbeatTick, nanos, nanos, TimeUnit.NANOSECONDS);
  }

  private void ensureOpen() {
    if (closed.get()) {
      throw new IllegalStateException("publisher " + workerId + " of '" + identity + "' is closed");
    }
  }

  /**
   * Marks the source STALE now and keeps it STALE (later heartbeats and republications say so),
   * best effort, without deregistering anything: for a process about to exit (a shutdown hook),
   * whose table must not outlive it as READY while there is no time for {@link #close()}.
   * Idempotent.
   */
  public void withdraw() {
    withdrawn = true;
    markStale();
  }

  /**
   * Stops heartbeats, marks the source STALE (best effort), then deregisters the memory in reverse
   * order.
   */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    List<AutoCloseable> steps = new ArrayList<>();
    steps.add(this::stopHeartbeats);
    steps.add(this::markStale);
    steps.addAll(registrations.reversed());
    Closeables.closeAll(steps);
  }

  private void stopHeartbeats() throws InterruptedException {
    if (heartbeats != null) {
      heartbeats.shutdownNow();
      if (!heartbeats.awaitTermination(10, TimeUnit.SECONDS)) {
        LOG.warn("publisher {}: heartbeat thread did not stop within 10 s", workerId);
      }
    }
  }

  private void markStale() {
    synchronized (lock) {
      try {
        store.heartbeat(identity, workerId, SourceStatus.STALE);
        lastStatus = SourceStatus.STALE;
      } catch (RuntimeException e) {
        // Best effort, as in ModelExpress: without a heartbeat the source goes stale on its own.
        LOG.warn(
            "publisher {} of '{}' could not mark itself STALE on {}: {}",
            workerId,
            identity,
            store.uri(),
            e.toString());
      }
    }
  }

  /** Collects tensors and settings; {@link #start()} does all the work. */
  public static final class Builder {
    private final Transport transport;
    private final MetadataStore store;
    private final List<PublishedRegion> regions = new ArrayList<>();
    private final List<MemorySegment> buffers = new ArrayList<>();

    /**
     * Buffers the caller registered (e.g. {@link Transport#allocate}d): served as they are, never
     * closed here.
     */
    private final List<MemorySegment> preRegistered = new ArrayList<>();

    private String identity;
    private String workerId = UUID.randomUUID().toString();
    private int rank;
    private int topologyWorld;
    private String topologyLayout;
    private String metadataEndpoint = "";
    private int deviceId;
    private Long step;
    private Settings settings = Settings.system();
    private Boolean digestsEnabled;
    private dev.mx.api.transport.MemoryKind deviceMemory;
    private dev.mx.api.memory.MemoryOps memoryOps;
    private ProviderRegistry<DigestProvider> digestProviders;
    private Duration heartbeatInterval;
    private DigestListener digestListener = (done, total) -> {};
    private ChangeLog changes;

    private Builder(Transport transport, MetadataStore store) {
      this.transport = Objects.requireNonNull(transport, "transport");
      this.store = Objects.requireNonNull(store, "store");
    }

    /** What is published (model and role); receivers discover the same string. Required. */
    public Builder identity(String id) {
      this.identity = id;
      return this;
    }

    /** Unique per publisher process; defaults to a random UUID. */
    public Builder workerId(String id) {
      this.workerId = id;
      return this;
    }

    public Builder rank(int r) {
      this.rank = r;
      return this;
    }

    /**
     * Declares the trainer job in the table ({@code publisher_topology}): this rank of {@code
     * worldSize}, laid out as {@code layout}. A receiver expecting another job then fails at once
     * naming both; the rank must equal {@link #rank}. Default none (a ModelExpress-compatible
     * table).
     */
    public Builder topology(int worldSize, String layout) {
      this.topologyWorld = worldSize;
      this.topologyLayout = Objects.requireNonNull(layout, "layout");
      return this;
    }

    /**
     * {@code host:port} where peers fetch this endpoint's metadata in a handshake; default none.
     */
    public Builder metadataEndpoint(String endpoint) {
      this.metadataEndpoint = endpoint == null ? "" : endpoint;
      return this;
    }

    /** The device the memory lives on (0 for host memory). */
    public Builder deviceId(int id) {
      this.deviceId = id;
      return this;
    }

    /** The training step of the first table; null (the default) when unknown. 0 is a real step. */
    public Builder step(Long s) {
      this.step = s;
      return this;
    }

    /**
     * Where the digest switch and heartbeat interval are read (default: system properties,
     * environment).
     */
    public Builder settings(Settings s) {
      this.settings = Objects.requireNonNull(s, "settings");
      return this;
    }

    /**
     * The tile digests' layout from the settings ({@link #TILE_BYTES_PROPERTY}, 0 turns them off;
     * {@link PublisherSetting#COLUMN_BLOCKS}).
     */
    TileLayout tileLayout() {
      return new TileLayout(
          settings.integer(TILE_BYTES_PROPERTY, TILE_BYTES_ENV, DEFAULT_TILE_BYTES),
          settings.integer(
              PublisherSetting.COLUMN_BLOCKS.property(),
              PublisherSetting.COLUMN_BLOCKS.env(),
              TileLayout.DEFAULT.columnBlocks()));
    }

    /** Overrides the digest switch of the settings. */
    public Builder digests(boolean enabled) {
      this.digestsEnabled = enabled;
      return this;
    }

    /** The digest providers to choose from (default {@link DigestProvider#registry()}). */
    public Builder digestProviders(ProviderRegistry<DigestProvider> registry) {
      this.digestProviders = Objects.requireNonNull(registry, "registry");
      return this;
    }

    /**
     * Publishes each shard's last-changed step ({@code changed_step}, for delta refits) as kept in
     * {@code log}, decided by its digest; needs digests and a step (default: none published).
     */
    public Builder changeLog(ChangeLog log) {
      this.changes = Objects.requireNonNull(log, "log");
      return this;
    }

    /** Told after each shard's digests (default: nobody). */
    public Builder digestListener(DigestListener listener) {
      this.digestListener = Objects.requireNonNull(listener, "listener");
      return this;
    }

    /** Overrides the heartbeat interval of the settings; must be positive. */
    public Builder heartbeatInterval(Duration interval) {
      this.heartbeatInterval = interval;
      return this;
    }

    /**
     * A shard held alone in {@code data} (contiguous, row-major, exactly {@code shape} elements of
     * {@code dtype}); {@code data} is registered as one region.
     */
    public Builder tensor(
        String name,
        DType dtype,
        Shape globalShape,
        long[] shardOffset,
        Shape shape,
        MemorySegment data) {
      regions.add(new PublishedRegion(name, dtype, globalShape, shardOffset, shape, data, false));
      buffers.add(data);
      return this;
    }

    /** A buffer that {@link #alias aliases} point into; registered as one region. */
    public Builder buffer(MemorySegment buffer) {
      buffers.add(buffer);
      return this;
    }

    /**
     * A buffer that {@link #alias aliases} point into, already registered with this publisher's
     * transport (typically memory from {@link Transport#allocate}, which a shared-memory transport
     * serves at memory speed). The publisher does not register it again and does not deregister it:
     * the caller closes {@code registration} after closing the publisher, and before the transport.
     */
    public Builder buffer(MemoryRegistration registration) {
      preRegistered.add(Objects.requireNonNull(registration, "registration").segment());
      if (registration.memoryKind().isDevice()) {
        if (deviceMemory != null && !deviceMemory.equals(registration.memoryKind())) {
          throw new IllegalArgumentException(
              "a publisher serves the memory of one device; got "
                  + deviceMemory
                  + " and "
                  + registration.memoryKind());
        }
        deviceMemory = registration.memoryKind();
      }
      return this;
    }

    /**
     * The memory operations that digest device buffers (default: the {@link
     * dev.mx.api.memory.MemoryOpsProvider} serving the device of the registrations given to {@link
     * #buffer(MemoryRegistration)}); shard digests of device memory are computed on the device.
     */
    public Builder memoryOps(dev.mx.api.memory.MemoryOps ops) {
      this.memoryOps = ops;
      return this;
    }

    /**
     * A shard held contiguously inside a {@link #buffer registered buffer}, starting {@code
     * byteOffset} bytes into it: zero-copy views such as the q, k and v rows of a fused QKV buffer.
     */
    public Builder alias(
        String name,
        DType dtype,
        Shape globalShape,
        long[] shardOffset,
        Shape shape,
        MemorySegment buffer,
        long byteOffset) {
      long bytes = shape.byteSize(dtype.elementSize());
      if (byteOffset < 0
          || byteOffset > buffer.byteSize()
          || bytes > buffer.byteSize() - byteOffset) {
        throw new IllegalArgumentException(
            "alias '"
                + name
                + "': "
                + bytes
                + " bytes at offset "
                + byteOffset
                + " do not fit in its buffer of "
                + buffer.byteSize()
                + " bytes");
      }
      regions.add(
          new PublishedRegion(
              name,
              dtype,
              globalShape,
              shardOffset,
              shape,
              buffer.asSlice(byteOffset, bytes),
              false));
      return this;
    }

    /**
     * Marks the shard of {@code name} at {@code shardOffset}, added before, as a replica of a box
     * another rank owns (the lowest rank holding it; data- or expert-parallel copies): it is listed
     * apart from the tensors, compact ({@link ShardTable#replicas()}), with its whole-shard digest
     * but no tile digests. Receivers that read part of it verify it with the owner's tiles (equal
     * digests, equal bytes), so replicas do not multiply the tile digests in the tables, and
     * ModelExpress' decoder, which skips the compact list, reads the box from its owner.
     *
     * @throws IllegalArgumentException when no shard of that name and offset was added
     */
    public Builder replica(String name, long[] shardOffset) {
      for (int i = regions.size() - 1; i >= 0; i--) {
        PublishedRegion r = regions.get(i);
        if (r.name().equals(name) && Arrays.equals(r.shardOffset(), shardOffset)) {
          regions.set(i, r.asReplica());
          return this;
        }
      }
      throw new IllegalArgumentException(
          "no shard of '" + name + "' at " + Arrays.toString(shardOffset) + " to mark a replica");
    }

    /**
     * Validates, registers the memory, computes digests, publishes the table and heartbeats READY.
     *
     * @throws IllegalArgumentException for invalid tensors or a heartbeat interval that is not
     *     positive
     * @throws NoProviderException when digests are on and no digest provider is available
     */
    public Publisher start() {
      if (identity == null || identity.isEmpty()) {
        throw new IllegalArgumentException(
            "a publisher needs an identity (what it publishes, e.g. model and role)");
      }
      if (workerId == null || workerId.isEmpty()) {
        throw new IllegalArgumentException("a publisher needs a non-empty worker id");
      }
      Duration interval =
          heartbeatInterval != null ? heartbeatInterval : Liveness.heartbeatInterval(settings);
      if (interval.isNegative() || interval.isZero()) {
        throw new IllegalArgumentException("heartbeat interval must be positive, got " + interval);
      }
      validateRegions();
      tileLayout(); // fails on a bad setting before any memory is registered
      DigestProvider digest = chooseDigest();
      List<MemoryRegistration> registered = register();
      Publisher p = new Publisher(this, registered, digest);
      try {
        synchronized (p.lock) {
          p.publish(step);
          p.heartbeatLocked();
        }
        p.startHeartbeats(interval);
      } catch (RuntimeException | Error e) {
        try {
          p.close();
        } catch (RuntimeException closeFailure) {
          e.addSuppressed(closeFailure);
        }
        throw e;
      }
      LOG.info(
          "publisher {} (rank {}) of '{}' serves {} shard(s) of {} tensor(s) as session '{}' on {}; digests {}",
          workerId,
          rank,
          identity,
          regions.size(),
          p.table.entryCount(),
          transport.localSession(),
          store.uri(),
          digest == null ? "off" : "by " + digest.name());
      return p;
    }

    private void validateRegions() {
      Map<String, PublishedRegion> firstOfName = new LinkedHashMap<>();
      Set<String> boxes = new HashSet<>();
      for (PublishedRegion r : regions) {
        r.validate();
        PublishedRegion first = firstOfName.putIfAbsent(r.name(), r);
        if (first != null
            && (first.dtype() != r.dtype() || !first.globalShape().equals(r.globalShape()))) {
          throw new IllegalArgumentException(
              "tensor '"
                  + r.name()
                  + "' is published as "
                  + first.dtype()
                  + " "
                  + first.globalShape()
                  + " and as "
                  + r.dtype()
                  + " "
                  + r.globalShape());
        }
        if (!boxes.add(r.boxKey())) {
          throw new IllegalArgumentException(
              "tensor '" + r.name() + "': the same box is published twice: " + r.boxKey());
        }
        if (!insideSomeBuffer(r.bytes())) {
          throw new IllegalArgumentException(
              "alias '"
                  + r.name()
                  + "' points into a buffer that was not added"
                  + " with buffer(...): only registered memory can be read");
        }
      }
    }

    private boolean insideSomeBuffer(MemorySegment s) {
      for (List<MemorySegment> list : List.of(buffers, preRegistered)) {
        for (MemorySegment b : list) {
          if (s.address() >= b.address()
              && s.address() + s.byteSize() <= b.address() + b.byteSize()) {
            return true;
          }
        }
      }
      return false;
    }

    private DigestProvider chooseDigest() {
      boolean on =
          digestsEnabled != null
              ? digestsEnabled
              : settings.bool(DIGEST_PROPERTY, DIGEST_ENV, true);
      if (!on) {
        return null;
      }
      if (deviceMemory != null) {
        // The CPU must not read device memory: digest where the bytes are.
        dev.mx.api.memory.MemoryOps ops =
            memoryOps != null
                ? memoryOps
                : dev.mx.api.memory.MemoryOpsProvider.forKind(
                    deviceMemory, dev.mx.api.memory.MemoryOpsProvider.registry());
        return new dev.mx.refit.memory.OpsDigest(ops);
      }
      ProviderRegistry<DigestProvider> registry =
          digestProviders != null ? digestProviders : DigestProvider.registry();
      try {
        return registry.select();
      } catch (NoProviderException e) {
        NoProviderException explained =
            new NoProviderException(
                e.getMessage()
                    + " Publishers compute shard"
                    + " digests by default; add dev.mx:mx-digest, or publish without digests with -D"
                    + DIGEST_PROPERTY
                    + "=false or "
                    + DIGEST_ENV
                    + "=0.");
        explained.initCause(e);
        throw explained;
      }
    }

    /** Registers every distinct buffer in order; on failure releases what was registered. */
    private List<MemoryRegistration> register() {
      List<MemoryRegistration> done = new ArrayList<>();
      Set<String> seen = new HashSet<>();
      try {
        for (MemorySegment b : buffers) {
          if (seen.add(b.address() + "+" + b.byteSize())) {
            done.add(transport.register(b));
          }
        }
      } catch (RuntimeException e) {
        try {
          Closeables.closeAll(done.reversed());
        } catch (RuntimeException rollback) {
          e.addSuppressed(rollback);
        }
        throw e;
      }
      return List.copyOf(done);
    }
  }
}
