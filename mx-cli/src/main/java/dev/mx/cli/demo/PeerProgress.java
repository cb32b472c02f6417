package dev.mx.cli.demo;

import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.SourceRecord;
import dev.mx.metadata.MetadataStores;
import dev.mx.metadata.progress.PartyRecords;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.stream.Collectors;

/**
 * What the demo's receivers wait on, for its progress line: every period it reads the trainer
 * ranks' progress records (the ones the receivers' waits judge) and hands {@code sink} a summary
 * such as "trainer 0: digesting step 0, 12/40 shards; trainer 1: writing step 0". Read failures are
 * left out of the line (the workers report real failures). {@link #close()} is idempotent.
 */
final class PeerProgress implements AutoCloseable {
  private final MetadataStore store;
  private final String identity;
  private final ScheduledExecutorService ticks;

  PeerProgress(String metadataUri, String identity, Duration period, Consumer<String> sink) {
    this.store = MetadataStores.open(metadataUri);
    this.identity = identity;
    this.ticks =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "mx-demo-progress");
              t.setDaemon(true);
              return t;
            });
    long nanos = period.toNanos();
    ticks.scheduleWithFixedDelay(
        () -> {
          String line = summary();
          if (!line.isEmpty()) {
            sink.accept(line);
          }
        },
        nanos,
        nanos,
        TimeUnit.NANOSECONDS);
  }

  /** "trainer R: phase" of every rank, by rank; empty when none could be read. */
  String summary() {
    try {
      List<SourceRecord> ranks = PartyRecords.list(store, identity);
      return ranks.stream()
          .sorted(Comparator.comparingInt(SourceRecord::rank))
          .map(r -> "trainer " + r.rank() + ": " + r.phase())
          .collect(Collectors.joining("; "));
    } catch (RuntimeException e) {
      return "";
    }
  }

  @Override
  public void close() {
    ticks.shutdownNow();
    store.close();
  }
}
