package dev.mx.it.layout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.mx.api.DType;
import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.WeightVersion;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.api.transport.TransportProvider;
import dev.mx.api.util.Closeables;
import dev.mx.layout.model.ModelArchitecture;
import dev.mx.layout.model.ModelConfigs;
import dev.mx.layout.vllm.InferenceTopology;
import dev.mx.layout.vllm.VllmLayout;
import dev.mx.layout.vllm.VllmReference;
import dev.mx.metadata.MetadataStores;
import dev.mx.refit.Receiver;
import dev.mx.refit.ReceiverConfig;
import dev.mx.refit.VerifyMode;
import dev.mx.refit.version.VersionFollower;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The version protocol across real processes: two Megatron trainer JVMs (tp=2) publish four versions of
 * tiny-llama through a {@code file:} store on their own clock, with no barrier; two vLLM receivers (tp=2) in
 * this JVM follow them over UCX. Each receiver must install steps 0, 1, 2, 3 in order, and every element it
 * installs must equal the generator's value for that step ({@link VllmReference}). Skips, printing the
 * cause, without UCX (unless {@code -Dmx.test.requireNative=true}).
 */
class VersionFollowAcrossProcessesTest {
  private static final String MODEL = "tiny-llama";
  private static final int STEPS = 4;
  @TempDir Path dir;

  private static TransportProvider ucx() {
    TransportProvider ucx = TransportProvider.registry().providers().stream()
        .filter(p -> p.name().equals("ucx")).findFirst().orElse(null);
    String cause = ucx == null ? "no ucx transport on the class path"
        : ucx.isAvailable() ? null : String.valueOf(ucx.unavailabilityCause());
    if (cause != null && Boolean.getBoolean("mx.test.requireNative")) {
      throw new AssertionError("UCX is required (-Dmx.test.requireNative=true) but unavailable: " + cause);
    }
    if (cause != null) {
      System.err.println("SKIPPED VersionFollowAcrossProcessesTest: trainer JVMs need a cross-process transport;"
          + " UCX unavailable: " + cause);
    }
    assumeTrue(cause == null, "UCX unavailable: " + cause);
    return ucx;
  }

  @Test
  void receiversFollowEveryVersionInOrderWithTheGeneratorsValues() throws Exception {
    TransportProvider ucx = ucx();
    String store = "file:" + dir.resolve("store");
    Path done = dir.resolve("done");
    ModelArchitecture model = ModelConfigs.load(MODEL);
    InferenceTopology inference = InferenceTopology.tp(2);
    Path javaBin = Path.of(System.getProperty("java.home"), "bin", "java");
    List<Process> trainers = new ArrayList<>();
    List<AutoCloseable> toClose = new ArrayList<>();
    try {
      for (int r = 0; r < 2; r++) {
        trainers.add(new ProcessBuilder(javaBin.toString(), "--enable-native-access=ALL-UNNAMED",
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", System.getProperty("java.class.path"),
            VersionTrainerChild.class.getName(), store, MODEL, "2", Integer.toString(r), Integer.toString(STEPS),
            "1500", "ucx", done.toString())
            .redirectError(ProcessBuilder.Redirect.INHERIT).start());
      }
      MetadataStore metadata = MetadataStores.open(store);
      toClose.add(metadata);
      List<VersionFollower> followers = new ArrayList<>();
      List<LayoutRefitEndToEndTest.CheckingInstaller> installers = new ArrayList<>();
      for (int r = 0; r < inference.tp(); r++) {
        Transport t = ucx.create(new TransportConfig("receiver-" + r, Duration.ofSeconds(30), Map.of()));
        toClose.add(t);
        VllmLayout geometry = new VllmLayout(model, inference, r, DType.F32);
        LayoutRefitEndToEndTest.CheckingInstaller installer = new LayoutRefitEndToEndTest.CheckingInstaller(
            new VllmReference(model, inference, r), DType.F32, DType.F32);
        installers.add(installer);
        int rank = r;
        VersionFollower f = VersionFollower.builder(metadata, "versions-it/" + MODEL).holder("receiver-" + r)
            .leaseTtl(Duration.ofSeconds(5)).installer(installer)
            .receivers((discovery, guarded) -> Receiver.builder()
                .config(ReceiverConfig.defaults().withVerify(VerifyMode.WHOLE_SHARDS).withRank(rank).withThreads(1)
                    .withTimeout(Duration.ofSeconds(30)))
                .transport(t).discovery(discovery).geometry(geometry).installer(guarded).rediscoverEachStep(true)
                .build())
            .build();
        toClose.add(0, f);
        followers.add(f);
      }
      // Each receiver follows on its own thread, as separate receiver processes would.
      List<List<String>> seen = new ArrayList<>();
      List<Future<?>> running = new ArrayList<>();
      ExecutorService pool = Executors.newFixedThreadPool(followers.size());
      try {
        for (int r = 0; r < followers.size(); r++) {
          List<String> mine = Collections.synchronizedList(new ArrayList<>());
          seen.add(mine);
          VersionFollower f = followers.get(r);
          LayoutRefitEndToEndTest.CheckingInstaller installer = installers.get(r);
          running.add(pool.submit(() -> {
            for (int i = 0; i < STEPS; i++) {
              VersionFollower.Followed got = f.next(Duration.ofSeconds(30));
              mine.add(got.step() + (installer.lastStep == got.step() && installer.mismatches.isEmpty()
                  && !installer.installed.isEmpty() && (Long) got.metrics().get("verified_shards") > 0 ? ""
                  : " (installed step " + installer.lastStep + ", mismatches " + installer.mismatches + ")"));
            }
            return null;
          }));
        }
        for (Future<?> f : running) {
          f.get(120, TimeUnit.SECONDS);
        }
      } catch (ExecutionException e) {
        throw new AssertionError("a follower failed after " + seen + ": " + e.getCause(), e.getCause());
      } finally {
        pool.shutdownNow();
      }
      for (int r = 0; r < followers.size(); r++) {
        assertEquals(List.of("0", "1", "2", "3"), seen.get(r),
            "receiver " + r + ": steps in order, each element equal to the generator's");
      }
      for (Process p : trainers) {
        BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        for (int step = 0; step < STEPS; step++) {
          assertEquals("PUBLISHED " + step, out.readLine());
        }
      }
      WeightVersion last = metadata.versions().latestReadable("versions-it/" + MODEL).orElseThrow();
      assertEquals(STEPS - 1, last.step());
      Files.createFile(done);
      for (Process p : trainers) {
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "trainer exits");
        assertEquals(0, p.exitValue(), "trainer exit status");
      }
      assertEquals(List.of(), metadata.versions().versions("versions-it/" + MODEL).stream()
          .filter(WeightVersion::isReadable).toList(), "closed trainers leave their slots STALE");
    } finally {
      Closeables.closeAll(toClose);
      trainers.forEach(Process::destroyForcibly);
    }
  }
}
