package dev.mx.bench.suite;

import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.WeightVersionStore;
import dev.mx.metadata.MetadataStores;
import dev.mx.rl.ManifestBook;
import dev.mx.rl.RefitClock;
import dev.mx.rl.RefitServer;
import dev.mx.rl.ServiceTraffic;
import dev.mx.rl.client.ManifestFetcher;
import dev.mx.rl.memory.MemoryRefitBackend;
import dev.mx.rl.proto.WeightVersionShard;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * The scale bench's {@code mx://} control plane (issue 36): a real RefitService server (memory
 * backend) holds versions, leases and one shard record per slot; every simulated trainer rank is a
 * real {@code mx://} store of its own, which registers a worker and serves its table from its own
 * {@code RefitWorkerService}, and receivers fetch each table from the worker that published it.
 * Cost: the central server's calls, message bytes and call time ({@link ServiceTraffic}), trainers'
 * timed re-registrations left out; the tables moved worker to worker are not the central service's.
 */
final class RefitServiceControlPlane implements ControlPlaneBackend {
  /** Receiver stores, as {@link RedisControlPlane#CONNECTIONS}: each keeps a channel per worker. */
  static final int RECEIVER_STORES = RedisControlPlane.CONNECTIONS;

  /** Fetching every table of a trillion-parameter model on one small host is slow. */
  private static final Duration FETCH_DEADLINE = Duration.ofMinutes(10);

  private static final int SERVING_REPS = 3;

  /**
   * A receiver's wait for one publisher's directory entry: a real one skips a publisher after 2 s,
   * but here 128 receivers ask 256 publishers at once on this host's few cores.
   */
  private static final long ENTRY_DEADLINE_MS = 600_000;

  private final ServiceTraffic traffic = new ServiceTraffic();
  private final RefitServer server;
  private final String uri;
  private boolean closed;

  RefitServiceControlPlane() {
    this.server =
        RefitServer.builder()
            .host("127.0.0.1")
            .port(0)
            .ownedBackend(new MemoryRefitBackend(RefitClock.system()))
            .intercept(traffic)
            .build();
    this.uri = "mx://127.0.0.1:" + server.port();
  }

  @Override
  public String describe() {
    return "RefitService (memory backend) on " + uri + ", tables served by each trainer rank";
  }

  @Override
  public String costName() {
    return "central";
  }

  @Override
  public Participants participants(int trainers) {
    List<MetadataStore> trainerStores = new ArrayList<>();
    List<MetadataStore> receiverStores = new ArrayList<>();
    String store = uri + "?entry-deadline-ms=" + ENTRY_DEADLINE_MS;
    try {
      for (int r = 0; r < trainers; r++) {
        trainerStores.add(MetadataStores.open(store));
      }
      for (int r = 0; r < RECEIVER_STORES; r++) {
        receiverStores.add(MetadataStores.open(store));
      }
    } catch (RuntimeException e) {
      trainerStores.forEach(MetadataStore::close);
      receiverStores.forEach(MetadataStore::close);
      throw e;
    }
    return new Participants() {
      @Override
      public WeightVersionStore trainer(int rank) {
        return trainerStores.get(rank).versions();
      }

      @Override
      public WeightVersionStore receiver(int rank) {
        return receiverStores.get(rank % receiverStores.size()).versions();
      }

      @Override
      public void close() {
        receiverStores.forEach(MetadataStore::close);
        trainerStores.forEach(MetadataStore::close);
      }
    };
  }

  @Override
  public Meter meter() {
    ServiceTraffic.Tally t = traffic.total();
    long calls = t.calls();
    long nanos = t.nanos();
    long bytes = t.bytes();
    return () -> new ServiceCost(t.calls() - calls, (t.nanos() - nanos) / 1000, t.bytes() - bytes);
  }

  /**
   * One trainer's worker serving its table to every receiver at once, the median of {@value
   * #SERVING_REPS} rounds after a warm-up: at scale each trainer rank serves from its own host, so
   * the busiest (largest table) bounds the fetch. The receivers' side (digest checks) runs on the
   * same cores here, so this is an upper bound.
   */
  @Override
  public double fetchServingMs(double fetchServerMs, byte[] largestTable, int receivers)
      throws Exception {
    ManifestBook book = new ManifestBook();
    String digest = book.put("serving", "0", largestTable);
    List<ManifestFetcher> fetchers = new ArrayList<>();
    try (RefitServer worker =
        RefitServer.builder().host("127.0.0.1").port(0).manifests(book).build()) {
      WeightVersionShard shard =
          WeightVersionShard.newBuilder()
              .setVersionId("serving")
              .setSourceSlotId("0")
              .setWorkerId("trainer-0")
              .setManifestDigest(digest)
              .setManifestEndpoint("127.0.0.1:" + worker.port())
              .setTransport("mx")
              .build();
      for (int i = 0; i < RECEIVER_STORES; i++) {
        fetchers.add(new ManifestFetcher(FETCH_DEADLINE));
      }
      List<Long> times = new ArrayList<>();
      for (int rep = 0; rep <= SERVING_REPS; rep++) {
        long t0 = System.nanoTime();
        List<CompletableFuture<byte[]>> all = new ArrayList<>();
        for (int r = 0; r < receivers; r++) {
          all.add(fetchers.get(r % fetchers.size()).fetchAsync(shard));
        }
        for (CompletableFuture<byte[]> f : all) {
          ManifestFetcher.await(f);
        }
        if (rep > 0) {
          times.add(System.nanoTime() - t0);
        }
      }
      return ScaleControlPlane.percentile(times, 0.5) / 1e6;
    } finally {
      fetchers.forEach(ManifestFetcher::close);
    }
  }

  @Override
  public boolean phasesScaleOut() {
    return true;
  }

  @Override
  public String fetchServingLabel() {
    return "one trainer serving its table to every receiver";
  }

  /** The server runs in this JVM: it does not die apart from the bench. */
  @Override
  public RuntimeException explain(RuntimeException failure) {
    return failure;
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    server.close();
  }
}
