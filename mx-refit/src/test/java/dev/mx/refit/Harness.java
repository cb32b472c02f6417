package dev.mx.refit;

import dev.mx.api.util.Settings;
import dev.mx.digest.CpuDigestProvider;
import java.util.Map;

/** The seed scenario wired to a receiver with capturing records and a recording installer. */
final class Harness implements AutoCloseable {
  final TestCluster cluster = new TestCluster();
  final SeedScenario seed;
  final CapturingRecords records = new CapturingRecords();
  final RecordingInstaller installer;

  Harness() {
    this(true);
  }

  Harness(boolean allGroups) {
    seed = new SeedScenario(cluster, allGroups);
    installer = new RecordingInstaller(cluster.receiver);
  }

  /** A builder over the seed plan with the given environment (read through {@link Settings#of}). */
  Receiver.Builder builder(Map<String, String> env) {
    return builder(Settings.of(Map.of(), env));
  }

  Receiver.Builder builder(Settings settings) {
    return Receiver.builder()
        .config(ReceiverConfig.fromProperties(Map.of(), settings))
        .settings(settings)
        .transport(cluster.receiver)
        .discovery(SourceDiscovery.fixed(seed.discovered(cluster)))
        .geometry(seed.geometry())
        .planner(seed.fixedPlanner())
        .installer(installer)
        .digests(new CpuDigestProvider())
        .records(records);
  }

  @Override
  public void close() {
    cluster.close();
  }
}
