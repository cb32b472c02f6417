package dev.mx.it.layout;

import dev.mx.api.DType;
import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.refit.Installer;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportProvider;
import dev.mx.api.util.Settings;
import dev.mx.it.demo.DemoMultiProcessTest;
import dev.mx.layout.model.ModelConfigs;
import dev.mx.layout.vllm.InferenceTopology;
import dev.mx.layout.vllm.VllmLayout;
import dev.mx.refit.LiveWeights;
import dev.mx.refit.Receiver;
import dev.mx.refit.ReceiverConfig;
import dev.mx.refit.SourceDiscovery;
import dev.mx.refit.VerifyMode;
import dev.mx.refit.stage.PipelinedWire;
import dev.mx.refit.version.VersionFollower;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;

/**
 * What the cross-process version tests share: the UCX check, trainer JVMs running the real {@code
 * mx publish --steps} command, and followers over tiny-llama in f32.
 */
final class VersionJvms {
  static final String MODEL = "tiny-llama";

  private VersionJvms() {}

  /** UCX, or a skip printing why (a failure under {@code -Dmx.test.requireNative=true}). */
  static TransportProvider requireUcx() {
    return requireTransport("ucx");
  }

  /**
   * The named cross-process transport, or a skip printing why (a failure under {@code
   * -Dmx.test.requireNative=true}).
   */
  static TransportProvider requireTransport(String name) {
    DemoMultiProcessTest.requireTransport(name);
    return TransportProvider.registry().select(name);
  }

  /** The java binary and class path (with the test classes) of a child JVM. */
  static List<String> java(String mainClass) {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("--enable-native-access=ALL-UNNAMED");
    cmd.add("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn");
    cmd.add("-cp");
    cmd.add(System.getProperty("surefire.test.class.path", System.getProperty("java.class.path")));
    cmd.add(mainClass);
    return cmd;
  }

  /**
   * One trainer rank as its own JVM: {@code mx publish --rank R --trainer tp=TP --trainer-dtype f32
   * ...} over UCX, followed by {@code args} (e.g. {@code --steps 3 --interval 1}); its stderr goes
   * to {@code dir/trainer-<rank>.log}.
   */
  static Process publish(Path dir, String store, String identity, int rank, int tp, String... args)
      throws IOException {
    return publish(dir, store, identity, "ucx", rank, tp, args);
  }

  /** As {@link #publish(Path, String, String, int, int, String...)} over {@code transport}. */
  static Process publish(
      Path dir, String store, String identity, String transport, int rank, int tp, String... args)
      throws IOException {
    List<String> cmd = java(dev.mx.cli.Main.class.getName());
    cmd.addAll(
        List.of(
            "publish",
            "--rank",
            Integer.toString(rank),
            "--model",
            MODEL,
            "--trainer",
            "tp=" + tp,
            "--trainer-dtype",
            "f32",
            "--metadata",
            store,
            "--transport",
            transport,
            "--identity",
            identity));
    cmd.addAll(List.of(args));
    return new ProcessBuilder(cmd)
        .redirectError(
            ProcessBuilder.Redirect.appendTo(dir.resolve("trainer-" + rank + ".log").toFile()))
        .start();
  }

  /** The trainer logs, for a failure message. */
  static String logs(Path dir, List<Process> trainers) throws IOException {
    StringBuilder sb = new StringBuilder();
    for (int r = 0; r < trainers.size(); r++) {
      Path log = dir.resolve("trainer-" + r + ".log");
      sb.append("\n--- trainer ")
          .append(r)
          .append(trainers.get(r).isAlive() ? " (alive)" : " (exited)")
          .append(":\n")
          .append(Files.exists(log) ? Files.readString(log) : "(no log)");
    }
    return sb.toString();
  }

  /**
   * A follower for inference rank {@code rank} of tp={@code tp} over {@code transport}, leasing as
   * {@code holder}, verifying whole shards; {@code discovery} may wrap what the follower hands its
   * receivers (e.g. to act once a version is leased and its tables fetched).
   */
  static VersionFollower follower(
      MetadataStore store,
      String identity,
      Transport transport,
      String holder,
      int rank,
      int tp,
      Installer installer,
      Duration leaseTtl,
      UnaryOperator<SourceDiscovery> discovery) {
    VllmLayout geometry =
        new VllmLayout(ModelConfigs.load(MODEL), InferenceTopology.tp(tp), rank, DType.F32);
    return VersionFollower.builder(store, identity)
        .holder(holder)
        .leaseTtl(leaseTtl)
        .installer(installer)
        .transport(transport)
        .receivers(
            (d, guarded) ->
                Receiver.builder()
                    .config(
                        ReceiverConfig.defaults()
                            .withVerify(VerifyMode.WHOLE_SHARDS)
                            .withRank(rank)
                            .withThreads(1)
                            .withTimeout(Duration.ofSeconds(30)))
                    .transport(transport)
                    .discovery(discovery.apply(d))
                    .geometry(geometry)
                    .installer(guarded)
                    .rediscoverEachStep(true)
                    .build())
        .build();
  }

  /** The geometry of inference rank 0 of tp=1 in f32: every trainer rank's bytes, read whole. */
  static VllmLayout inferenceTp1() {
    return new VllmLayout(ModelConfigs.load(MODEL), InferenceTopology.tp(1), 0, DType.F32);
  }

  /**
   * A follower (holder {@code receiver-0}) writing {@code live}, inference rank 0 of tp=1, in place
   * over {@code transport} (with which {@code live} is registered), reading with two worker threads
   * in landing batches of 4 KiB, so the first batch lands long before the install ends; the caller
   * adds leases, restores and attempts.
   */
  static VersionFollower.Builder inPlaceFollower(
      MetadataStore store,
      String identity,
      Transport transport,
      LiveWeights live,
      Duration readTimeout) {
    Settings settings = Settings.of(Map.of(PipelinedWire.LANDING_PROPERTY, "4k"), Map.of());
    VllmLayout geometry = inferenceTp1();
    return VersionFollower.builder(store, identity)
        .holder("receiver-0")
        .installer(live)
        .transport(transport)
        .receivers(
            (d, guarded) ->
                Receiver.builder()
                    .config(
                        ReceiverConfig.defaults()
                            .withRank(0)
                            .withThreads(2)
                            .withTimeout(readTimeout))
                    .settings(settings)
                    .transport(transport)
                    .discovery(d)
                    .geometry(geometry)
                    .inPlace(live)
                    .installer(guarded)
                    .rediscoverEachStep(true)
                    .build());
  }

  /** Whether a read of {@code batch} lands in one of {@code live}'s parameters. */
  static boolean landsIn(LiveWeights live, List<ReadDescriptor> batch) {
    for (ReadDescriptor d : batch) {
      for (String name : live.layout().keySet()) {
        MemorySegment p = live.parameter(name);
        if (d.dstAddr() >= p.address() && d.dstAddr() < p.address() + p.byteSize()) {
          return true;
        }
      }
    }
    return false;
  }
}
