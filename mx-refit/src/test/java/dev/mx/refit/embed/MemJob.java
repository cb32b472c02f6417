package dev.mx.refit.embed;

import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.api.util.Closeables;
import dev.mx.metadata.memory.MemoryMetadataStore;
import dev.mx.transport.mem.MemTransportProvider;
import java.lang.foreign.Arena;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * What the embedding tests share: a job identity, a real in-memory store, native memory, mem
 * transports, a pool for the coordinator, and everything closed in reverse order afterwards.
 */
final class MemJob implements AutoCloseable {
  static final Duration WAIT = Duration.ofSeconds(20);

  final String model;
  final MetadataStore store;
  final Arena arena = Arena.ofShared();
  final ExecutorService pool = Executors.newCachedThreadPool();
  private final List<AutoCloseable> owned = new ArrayList<>();

  MemJob(String prefix) {
    model = "model=" + prefix + "-" + UUID.randomUUID();
    store = new MemoryMetadataStore(model);
  }

  /** A mem transport of session {@code name}, closed with the job. */
  Transport mem(String name) {
    return own(new MemTransportProvider().create(TransportConfig.of(name)));
  }

  /** Closes {@code c} with the job, before what was owned earlier. */
  <T extends AutoCloseable> T own(T c) {
    owned.add(c);
    return c;
  }

  /** Trainer rank {@code r} of a tp=2 job of this model, without a shutdown hook. */
  TrainerRank.Builder trainer(int r, boolean versions) {
    return TrainerRank.builder(mem(model + "-trainer-" + r), store, model)
        .job(r, 2, "tp=2")
        .workerId("trainer-" + r)
        .leaseWait(WAIT)
        .versions(versions)
        .shutdownHook(false);
  }

  @Override
  public void close() {
    pool.shutdownNow();
    owned.add(arena);
    owned.add(store);
    Closeables.closeAll(owned.reversed());
  }
}
