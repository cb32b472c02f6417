package dev.mx.rl.store;

import dev.mx.api.annotation.Internal;
import dev.mx.api.metadata.SourceRecord;
import dev.mx.api.metadata.SourceStatus;
import dev.mx.api.metadata.WeightVersionStore;
import dev.mx.metadata.AbstractMetadataStore;
import dev.mx.metadata.MetadataStoreException;
import dev.mx.rl.ManifestBook;
import dev.mx.rl.RefitServer;
import dev.mx.rl.client.ManifestFetcher;
import dev.mx.rl.client.RefitCallException;
import dev.mx.rl.client.RefitClient;
import dev.mx.rl.client.RefitRequests;
import dev.mx.rl.client.WorkerHeartbeat;
import dev.mx.rl.proto.WeightPayloadFormat;
import dev.mx.rl.proto.WeightVersionShard;
import dev.mx.rl.proto.WorkerRole;
import dev.mx.rl.store.DirectoryEntry.KnownVersion;
import io.grpc.Status;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * mx's metadata store over a RefitService server ({@code mx://host:port}). The server keeps only
 * records: this process registers one TRAINER worker per name it publishes under (an identity or a
 * model; re-registered every third of {@value #WORKER_TTL_SECONDS} s), and one shard record per
 * name in that name's <em>directory version</em> (idempotency key {@value #DIRECTORY}) pointing at
 * the small {@code RefitWorkerService} this process starts on a free port. What the directory
 * record points to (its source records, the versions it created) and every shard table are served
 * from here; receivers list the directory's shard records and ask each publisher.
 */
@Internal
public final class RefitMetadataStore extends AbstractMetadataStore {
  private static final Logger LOG = LoggerFactory.getLogger(RefitMetadataStore.class);

  /** The idempotency key and only source slot of every name's directory version. */
  static final String DIRECTORY = "mx:directory";

  /**
   * The key under which a publishing process also serves its directory entry without records: the
   * versions alone, which is all a follower's poll needs (records carry transport blobs).
   */
  static final String DIRECTORY_VERSIONS = "mx:directory:versions";

  /**
   * The digest a directory record carries: its entry changes with every heartbeat, so the record
   * names the entry's format instead (receivers fetch it without a digest check).
   */
  static final String DIRECTORY_DIGEST = sha256Hex("mx directory entry v1");

  /** What mx writes in a shard record's {@code transport}: the table says which transport. */
  static final String TRANSPORT = "mx";

  static final int WORKER_TTL_SECONDS = 10;

  /**
   * How long a receiver waits for one publisher's directory entry before skipping it, unless the
   * URI's {@code entry-deadline-ms} says otherwise.
   */
  static final Duration ENTRY_DEADLINE = Duration.ofSeconds(2);

  private final String workerHost;
  final RefitClient central;
  final ManifestFetcher fetcher = new ManifestFetcher(RefitClient.DEFAULT_DEADLINE);
  private final ManifestFetcher entryFetcher;
  final ManifestBook book = new ManifestBook();
  private RefitServer workerServer;

  /** name → this process's worker registered under it. */
  private final Map<String, WorkerHeartbeat> workers = new ConcurrentHashMap<>();

  /** identity → mx worker id → this process's records. */
  private final Map<String, Map<String, SourceRecord>> records = new ConcurrentHashMap<>();

  /** model → mx version id → the versions this process created or published into. */
  final Map<String, Map<String, KnownVersion>> known = new ConcurrentHashMap<>();

  /** name → uid of its directory version, as first looked up. */
  private final Map<String, String> directoryUids = new ConcurrentHashMap<>();

  /** identity + NUL + mx worker id → the directory record that served it last (for get). */
  private final Map<String, WeightVersionShard> servedBy = new ConcurrentHashMap<>();

  private final RefitWeightVersions versions;

  RefitMetadataStore(String uri, String host, int port, Duration entryDeadline) {
    super(uri);
    this.central = new RefitClient(host, port);
    this.entryFetcher = new ManifestFetcher(entryDeadline);
    // Workers of a loopback server serve on loopback; otherwise on the host's address.
    this.workerHost =
        host.equals("127.0.0.1") || host.equals("localhost") || host.equals("::1")
            ? "127.0.0.1"
            : System.getProperty("mx.rl.worker.host", "0.0.0.0");
    this.versions = new RefitWeightVersions(this);
  }

  @Override
  public WeightVersionStore versions() {
    return versions;
  }

  /** The RefitService server, for messages. */
  String server() {
    return central.target();
  }

  // ---- this process as a worker ---------------------------------------------------------------

  /** This process's RefitService worker for {@code name}, registered and in the directory. */
  synchronized String workerFor(String name) {
    ensureOpen();
    WorkerHeartbeat w = workers.get(name);
    if (w != null) {
      return w.workerId();
    }
    if (workerServer == null) {
      workerServer = RefitServer.builder().host(workerHost).port(0).manifests(book).build();
    }
    String dir = directoryUid(name);
    w =
        new WorkerHeartbeat(
            central,
            RefitClient.freshWorkerId(),
            WorkerRole.WORKER_ROLE_TRAINER,
            name,
            WORKER_TTL_SECONDS);
    book.serveLive(dir, DIRECTORY, () -> entry(name));
    book.serveLive(
        dir,
        DIRECTORY_VERSIONS,
        () -> DirectoryEntry.encode(name, List.of(), known.getOrDefault(name, Map.of()).values()));
    central.publishShard(
        WeightVersionShard.newBuilder()
            .setVersionId(dir)
            .setSourceSlotId(DIRECTORY)
            .setWorkerId(w.workerId())
            .setManifestDigest(DIRECTORY_DIGEST)
            .setManifestEndpoint(endpoint())
            .setTransport(TRANSPORT)
            .build());
    workers.put(name, w);
    LOG.info(
        "{}: this process serves '{}' as worker {} at {}", uri(), name, w.workerId(), endpoint());
    return w.workerId();
  }

  /** host:port of this process's RefitWorkerService as others reach it. */
  String endpoint() {
    String host = workerHost.equals("0.0.0.0") ? localAddress() : workerHost;
    return host + ":" + workerServer.port();
  }

  private static String localAddress() {
    try {
      return java.net.InetAddress.getLocalHost().getHostAddress();
    } catch (java.net.UnknownHostException e) {
      return "127.0.0.1";
    }
  }

  private byte[] entry(String name) {
    return DirectoryEntry.encode(
        name,
        records.getOrDefault(name, Map.of()).values(),
        known.getOrDefault(name, Map.of()).values());
  }

  /** The uid of {@code name}'s directory version, created by the first who asks. */
  String directoryUid(String name) {
    String uid = directoryUids.get(name);
    if (uid == null) {
      uid =
          call(
                  "the directory of '" + name + "'",
                  () ->
                      central.createVersion(
                          RefitRequests.createVersion(
                              name,
                              DIRECTORY,
                              WeightPayloadFormat.WEIGHT_PAYLOAD_FORMAT_FULL_TENSOR,
                              List.of(DIRECTORY),
                              OptionalLong.empty(),
                              Optional.empty())))
              .getUid();
      directoryUids.put(name, uid);
    }
    return uid;
  }

  /**
   * The entries every live publisher under {@code name} serves now. A publisher that does not
   * answer is skipped: it is gone, and its records with it.
   */
  List<Served> entries(String name) {
    return entries(name, true);
  }

  /**
   * As {@link #entries(String)}; without {@code records} each publisher is asked for its versions
   * alone (its full entry when it serves no such key), and the entries hold no records.
   */
  List<Served> entries(String name, boolean records) {
    String dir = directoryUid(name);
    List<WeightVersionShard> shards;
    try {
      shards = central.listShards(dir);
    } catch (RefitCallException e) {
      throw lostOrFailed(e, "the directory of '" + name + "' (version uid '" + dir + "')");
    }
    // Every publisher is asked at once: a poll costs one round trip however many publish.
    List<CompletableFuture<byte[]>> asked = new ArrayList<>();
    for (WeightVersionShard s : shards) {
      asked.add(
          records
              ? entryFetcher.fetchLiveAsync(s)
              : entryFetcher
                  .fetchLiveAsync(s.toBuilder().setSourceSlotId(DIRECTORY_VERSIONS).build())
                  .exceptionallyCompose(e -> entryFetcher.fetchLiveAsync(s)));
    }
    List<Served> out = new ArrayList<>();
    for (int i = 0; i < shards.size(); i++) {
      WeightVersionShard s = shards.get(i);
      try {
        byte[] bytes = ManifestFetcher.await(asked.get(i));
        out.add(
            new Served(
                s,
                DirectoryEntry.decode(
                    name,
                    bytes,
                    "worker '" + s.getWorkerId() + "' at " + s.getManifestEndpoint())));
      } catch (ManifestFetcher.ManifestException | IllegalArgumentException e) {
        LOG.debug("{}: skipping publisher of '{}': {}", uri(), name, e.getMessage());
      }
    }
    return out;
  }

  /** One publisher's directory record and what it served. */
  record Served(WeightVersionShard record, DirectoryEntry entry) {}

  /**
   * The failure of a call about {@code subject}: a NOT_FOUND of a uid this process saw before means
   * the server lost its state (a memory: backend restarted), which is said so.
   */
  MetadataStoreException lostOrFailed(RefitCallException e, String subject) {
    if (e.code() == Status.Code.NOT_FOUND) {
      return new MetadataStoreException(
          uri(),
          "RefitService at "
              + server()
              + " no longer knows "
              + subject
              + ": the server lost its state (restarted over a memory: backend?): "
              + e.getMessage());
    }
    return new MetadataStoreException(uri(), subject + ": " + e.getMessage());
  }

  <T> T call(String subject, java.util.function.Supplier<T> rpc) {
    try {
      return rpc.get();
    } catch (RefitCallException e) {
      throw lostOrFailed(e, subject);
    }
  }

  // ---- MetadataStore ---------------------------------------------------------------------------

  @Override
  public void publish(SourceRecord record) {
    ensureOpen();
    requireName("identity", record.identity());
    requireName("worker id", record.workerId());
    records
        .computeIfAbsent(record.identity(), i -> new ConcurrentHashMap<>())
        .put(record.workerId(), unbeaten(record));
    workerFor(record.identity());
  }

  @Override
  public void heartbeat(String identity, String workerId, SourceStatus status) {
    beat(identity, workerId, status, null, null);
  }

  @Override
  public void heartbeat(
      String identity, String workerId, SourceStatus status, long progress, String phase) {
    beat(identity, workerId, status, progress, phase);
  }

  /** Stamps a record of this process; its worker's registration is what RefitService sees. */
  private void beat(
      String identity, String workerId, SourceStatus status, Long progress, String phase) {
    ensureOpen();
    long now = System.currentTimeMillis();
    SourceRecord updated =
        records
            .getOrDefault(identity, new ConcurrentHashMap<>())
            .computeIfPresent(workerId, (w, r) -> beaten(r, status, now, progress, phase));
    if (updated == null) {
      throw unknownSource(identity, workerId);
    }
  }

  @Override
  public List<SourceRecord> listReady(String identity, Duration freshness, boolean withBlobs) {
    ensureOpen();
    requireFreshness(freshness);
    long now = System.currentTimeMillis();
    List<SourceRecord> out = new ArrayList<>();
    for (Served s : entries(identity)) {
      for (SourceRecord r : s.entry().records()) {
        servedBy.put(identity + "\0" + r.workerId(), s.record());
        if (isFreshReady(r, now, freshness)) {
          out.add(withBlobs ? r : withBlob(r, new byte[0]));
        }
      }
    }
    out.sort(NEWEST_FIRST);
    return out;
  }

  @Override
  public Optional<SourceRecord> get(String identity, String workerId) {
    ensureOpen();
    Map<String, SourceRecord> mine = records.getOrDefault(identity, Map.of());
    if (mine.containsKey(workerId)) {
      SourceRecord r = mine.get(workerId);
      return Optional.of(withBlob(r, r.blob().clone()));
    }
    // Ask the publisher that listed it last, else every publisher.
    WeightVersionShard last = servedBy.get(identity + "\0" + workerId);
    if (last != null) {
      try {
        DirectoryEntry e =
            DirectoryEntry.decode(identity, entryFetcher.fetchLive(last), last.getWorkerId());
        Optional<SourceRecord> r = find(e, workerId);
        if (r.isPresent()) {
          return r;
        }
      } catch (ManifestFetcher.ManifestException | IllegalArgumentException e) {
        LOG.debug("{}: publisher of '{}' gone: {}", uri(), workerId, e.getMessage());
      }
    }
    for (Served s : entries(identity)) {
      Optional<SourceRecord> r = find(s.entry(), workerId);
      if (r.isPresent()) {
        servedBy.put(identity + "\0" + workerId, s.record());
        return r;
      }
    }
    return Optional.empty();
  }

  private static Optional<SourceRecord> find(DirectoryEntry e, String workerId) {
    return e.records().stream().filter(r -> r.workerId().equals(workerId)).findFirst();
  }

  /** Removes a record of this process (its directory record stays; it serves one record less). */
  @Override
  public void remove(String identity, String workerId) {
    ensureOpen();
    records.getOrDefault(identity, new ConcurrentHashMap<>()).remove(workerId);
  }

  @Override
  protected void doClose() {
    workers.values().forEach(WorkerHeartbeat::close);
    versions.close();
    if (workerServer != null) {
      workerServer.close();
    }
    fetcher.close();
    entryFetcher.close();
    central.close();
  }

  static String sha256Hex(String s) {
    try {
      return HexFormat.of()
          .formatHex(
              MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every JDK has SHA-256", e);
    }
  }
}
