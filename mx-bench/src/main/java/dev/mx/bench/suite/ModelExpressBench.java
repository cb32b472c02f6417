package dev.mx.bench.suite;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.mx.api.DType;
import dev.mx.api.digest.DigestProvider;
import dev.mx.api.error.MxException;
import dev.mx.api.plan.BoundingMode;
import dev.mx.api.plan.Shard;
import dev.mx.api.plan.SourceInfo;
import dev.mx.api.plan.TransferPlan;
import dev.mx.api.refit.Capture;
import dev.mx.api.refit.ManifestEntry;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.api.util.Settings;
import dev.mx.cli.bench.BenchOptions;
import dev.mx.cli.bench.BenchResult;
import dev.mx.cli.bench.Benchmark;
import dev.mx.digest.CpuDigestProvider;
import dev.mx.digest.ShardDigest;
import dev.mx.layout.PlanningInventory;
import dev.mx.layout.ShardAddressing;
import dev.mx.layout.model.ModelArchitecture;
import dev.mx.layout.model.ModelConfigs;
import dev.mx.layout.trainer.AliasShard;
import dev.mx.layout.trainer.LocalBuffer;
import dev.mx.layout.trainer.TrainerLayout;
import dev.mx.layout.trainer.TrainerRankLayout;
import dev.mx.layout.trainer.TrainerTopology;
import dev.mx.layout.vllm.InferenceTopology;
import dev.mx.layout.vllm.VllmLayout;
import dev.mx.plan.PlanOptions;
import dev.mx.plan.ReshardPlanner;
import dev.mx.plan.json.PlanJson;
import dev.mx.refit.DiscoveredSources;
import dev.mx.refit.VerifyMode;
import dev.mx.refit.publish.TileLayout;
import dev.mx.transport.mem.MemTransportProvider;
import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * mx's receiver against ModelExpress's unmodified {@code ReshardReceiver.update_weights} on the
 * same plan, in memory: for each inference rank, mx refits over {@code mem} with {@code --verify
 * all} and {@code off}, then ModelExpress's Python receiver refits the same planning request over
 * its in-memory reference transport ({@code update_weights.py}, shipped in this jar). Both see the
 * same Megatron trainer layout and vLLM capture, the same bytes per step and the same warm-up;
 * ranks run one after the other so each has the machine. ModelExpress is not part of mx: {@code
 * MX_MODELEXPRESS_SRC} names its Python client (modelexpress_client/python of a checkout), {@code
 * MX_MODELEXPRESS_PYTHON} a Python with torch (default python3). Model: {@code
 * -Dmx.bench.modelexpress.model} (default Llama-3-8B's config.json, shipped in this jar), cut to
 * {@code -Dmx.bench.modelexpress.layers} layers (default 4: the shape of Llama-3-8B, at a size two
 * copies of which fit this machine), topologies {@code -Dmx.bench.modelexpress.trainer} (tp=4) and
 * {@code .inference} (tp=2), bf16 on both sides. {@code -Dmx.bench.modelexpress.out=DIR} keeps the
 * script and the requests ({@code rank-N.request.json}, for {@code mx plan}) in DIR.
 */
public final class ModelExpressBench implements Benchmark {
  static final String SOURCE_ENV = "MX_MODELEXPRESS_SRC";
  static final String PYTHON_ENV = "MX_MODELEXPRESS_PYTHON";
  private static final String RESOURCES = "/dev/mx/bench/modelexpress/";
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final DigestProvider DIGESTS = new CpuDigestProvider();

  private final Settings settings;

  public ModelExpressBench() {
    this(Settings.system());
  }

  ModelExpressBench(Settings settings) {
    this.settings = settings;
  }

  @Override
  public String name() {
    return "modelexpress";
  }

  @Override
  public String description() {
    return "mx (verify all, off) vs ModelExpress's update_weights, same plan, in memory ("
        + SOURCE_ENV
        + ")";
  }

  @Override
  public List<BenchResult> run(BenchOptions options) throws Exception {
    Path client = modelExpressClient();
    String python = java.util.Objects.requireNonNullElse(settings.env(PYTHON_ENV), "python3");
    ModelArchitecture model = model();
    TrainerTopology trainerTopology =
        TrainerTopology.parse(System.getProperty("mx.bench.modelexpress.trainer", "tp=4"));
    InferenceTopology inference =
        InferenceTopology.parse(System.getProperty("mx.bench.modelexpress.inference", "tp=2"));
    TrainerLayout trainer = trainerTopology.layout(model, DType.BF16);
    String keep = System.getProperty("mx.bench.modelexpress.out");
    Path work =
        keep != null
            ? Files.createDirectories(Path.of(keep))
            : Files.createTempDirectory("mx-bench-modelexpress");
    Path script = work.resolve("update_weights.py");
    Files.deleteIfExists(script);
    copyResource("update_weights.py", script);
    options
        .progress()
        .printf(
            "modelexpress bench: %s (%d layers), trainer %s -> inference %s, bf16, %s%n",
            model.modelName(), model.numHiddenLayers(), trainerTopology, inference, work);
    List<BenchResult> out = new ArrayList<>();
    double mxAll = 0;
    double mxOff = 0;
    double modelExpress = 0;
    // What every trainer rank publishes, at the addresses the requests carry: the same for each
    // inference rank.
    Map<String, SourceInfo> planned =
        PlanningInventory.sources(trainer.ranks(), ShardAddressing.synthetic());
    List<ManifestEntry> manifest = VllmLayout.manifest(model, DType.BF16);
    try {
      for (int rank = 0; rank < inference.worldSize(); rank++) {
        Capture capture = new VllmLayout(model, inference, rank, DType.BF16).capture(manifest);
        Path request = work.resolve("rank-" + rank + ".request.json");
        JSON.writerWithDefaultPrettyPrinter()
            .writeValue(
                request.toFile(),
                PlanJson.writeRequest(planned, capture.result(), capture.paramLayout()));
        String tag = "_rank" + rank;
        double[] mx = mxRefits(options, trainer, capture, rank);
        JsonNode me = modelExpressRefits(options, python, script, client, request);
        requireSamePlan(me, capture, planned, request);
        double meE2e = me.get("median_e2e_s").asDouble();
        out.add(
            new BenchResult(
                "mx_verify_all_warm_e2e_s" + tag,
                mx[0],
                "s",
                "modelexpress_update_weights_s" + tag,
                meE2e));
        out.add(
            new BenchResult(
                "mx_verify_off_warm_e2e_s" + tag,
                mx[1],
                "s",
                "modelexpress_update_weights_s" + tag,
                meE2e));
        out.add(
            new BenchResult(
                "mx_verify_all_wire_s" + tag,
                mx[2],
                "s",
                "modelexpress_wire_fused_s" + tag,
                me.get("median_wire_fused_s").asDouble()));
        mxAll += mx[0];
        mxOff += mx[1];
        modelExpress += meE2e;
      }
    } finally {
      if (keep == null) {
        deleteTree(work);
      }
    }
    // Every rank's step, one after the other: what the whole receiver side costs each system.
    out.add(
        new BenchResult(
            "mx_verify_all_warm_e2e_s_all_ranks",
            mxAll,
            "s",
            "modelexpress_update_weights_s_all_ranks",
            modelExpress));
    out.add(
        new BenchResult(
            "mx_verify_off_warm_e2e_s_all_ranks",
            mxOff,
            "s",
            "modelexpress_update_weights_s_all_ranks",
            modelExpress));
    return out;
  }

  /** The ModelExpress Python client, or a failure that says how to point mx at one. */
  private Path modelExpressClient() {
    String dir = settings.env(SOURCE_ENV);
    if (dir == null || dir.isBlank()) {
      throw new MxException(
          "modelexpress bench: ModelExpress is not part of mx; set "
              + SOURCE_ENV
              + " to its Python client (modelexpress_client/python of a ModelExpress"
              + " checkout) and "
              + PYTHON_ENV
              + " to a Python with torch (docs/performance/modelexpress.md)");
    }
    Path client = Path.of(dir);
    Path receiver = client.resolve("modelexpress/refit/reshard/receiver.py");
    if (!Files.isRegularFile(receiver)) {
      throw new MxException(
          "modelexpress bench: "
              + SOURCE_ENV
              + "="
              + dir
              + " holds no ModelExpress client (no "
              + receiver
              + "); point it at modelexpress_client/python of a ModelExpress checkout");
    }
    return client;
  }

  private static ModelArchitecture model() throws IOException {
    String json;
    String source;
    String name;
    String given = System.getProperty("mx.bench.modelexpress.model");
    if (given == null) {
      try (InputStream in =
          ModelExpressBench.class.getResourceAsStream(RESOURCES + "llama-3-8b.json")) {
        json = new String(in.readAllBytes(), StandardCharsets.UTF_8);
      }
      source = "resource:" + RESOURCES + "llama-3-8b.json";
      name = "llama-3-8b";
    } else {
      Path p = Path.of(given);
      p = Files.isDirectory(p) ? p.resolve("config.json") : p;
      json = Files.readString(p);
      source = p.toString();
      name = p.toAbsolutePath().getParent().getFileName().toString();
    }
    int layers = Integer.getInteger("mx.bench.modelexpress.layers", 4);
    if (layers > 0) {
      ObjectNode config = (ObjectNode) JSON.readTree(json);
      config.put("num_hidden_layers", layers);
      json = JSON.writeValueAsString(config);
    }
    return ModelConfigs.parse(json, source, name);
  }

  /**
   * mx's warm refits of receiver {@code rank} with verify all and off over mem transports, one per
   * trainer rank: {all e2e s, off e2e s, all wire s}. The memory is freed before ModelExpress runs.
   */
  private static double[] mxRefits(
      BenchOptions options, TrainerLayout trainer, Capture capture, int rank) throws Exception {
    List<Transport> publishers = new ArrayList<>();
    try (Arena arena = Arena.ofShared();
        Transport receiver =
            new MemTransportProvider().create(TransportConfig.of("inference-" + rank))) {
      Map<Integer, Map<String, MemorySegment>> buffers = new LinkedHashMap<>();
      Map<String, byte[]> peers = new LinkedHashMap<>();
      int seed = 0;
      for (TrainerRankLayout r : trainer.ranks()) {
        Transport t = new MemTransportProvider().create(TransportConfig.of("trainer-" + r.rank()));
        publishers.add(t);
        Map<String, MemorySegment> byName = new LinkedHashMap<>();
        for (LocalBuffer b : r.buffers()) {
          MemorySegment seg = arena.allocate(b.byteSize(), 4096);
          WarmRefits.fill(seg, seed++);
          t.register(seg);
          byName.put(b.name(), seg);
        }
        buffers.put(r.rank(), byName);
        peers.put("trainer-" + r.rank(), t.localMetadata());
      }
      Map<String, SourceInfo> sources =
          digested(
              PlanningInventory.sources(
                  trainer.ranks(),
                  new ShardAddressing() {
                    @Override
                    public String session(TrainerRankLayout r) {
                      return "trainer-" + r.rank();
                    }

                    @Override
                    public long address(TrainerRankLayout r, AliasShard alias) {
                      return buffers.get(r.rank()).get(alias.bufferName()).address()
                          + alias.elementOffset() * r.dtype().elementSize();
                    }
                  }),
              options.effectiveThreads());
      DiscoveredSources discovered = new DiscoveredSources(sources, peers);
      String label = "modelexpress bench: mx rank " + rank;
      WarmRefits.Timing all =
          WarmRefits.run(
              options, label, receiver, discovered, capture, VerifyMode.ALL, m -> verified(m));
      WarmRefits.Timing off =
          WarmRefits.run(options, label, receiver, discovered, capture, VerifyMode.OFF, m -> {});
      return new double[] {all.endToEnd(), off.endToEnd(), all.wire()};
    } finally {
      for (Transport t : publishers) {
        t.close();
      }
    }
  }

  /** The sources with each shard's published digest, computed over its real bytes. */
  private static Map<String, SourceInfo> digested(Map<String, SourceInfo> sources, int threads) {
    Map<String, SourceInfo> out = new LinkedHashMap<>();
    sources.forEach(
        (name, info) -> {
          List<Shard> shards = new ArrayList<>(info.shards().size());
          for (Shard s : info.shards()) {
            MemorySegment bytes =
                MemorySegment.ofAddress(s.addr()).reinterpret(s.shape().byteSize(s.elsize()));
            shards.add(
                new Shard(
                    s.shardOffset(),
                    s.shape(),
                    s.session(),
                    s.addr(),
                    s.elsize(),
                    ShardDigest.digest(bytes, threads),
                    // As mx's publishers do by default: a receiver reading part of a shard
                    // verifies the tiles it touches instead of pulling the whole shard.
                    TileLayout.DEFAULT.digest(
                        DIGESTS, bytes, s.shape(), info.globalShape(), s.elsize())));
          }
          out.put(name, new SourceInfo(info.globalShape(), info.dtype(), shards));
        });
    return out;
  }

  private static void verified(Map<String, Object> metrics) {
    Object unverified = metrics.get("unverified_bytes");
    if (unverified instanceof Number n && n.longValue() != 0) {
      throw new IllegalStateException(
          "mx installed " + n + " unverified bytes under --verify all: " + metrics);
    }
  }

  /** Runs ModelExpress's receiver on {@code request}; its JSON report. */
  private static JsonNode modelExpressRefits(
      BenchOptions options, String python, Path script, Path client, Path request)
      throws IOException, InterruptedException {
    options
        .progress()
        .printf("modelexpress bench: ModelExpress update_weights on %s ...%n", request);
    ProcessBuilder pb =
        new ProcessBuilder(
                python,
                script.toString(),
                "--modelexpress",
                client.toString(),
                "--request",
                request.toString(),
                "--warmup",
                "2",
                "--steps",
                Integer.toString(options.repetitions()))
            .redirectError(ProcessBuilder.Redirect.INHERIT);
    // One JSON line per step on stderr is noise here: the script reports the medians itself.
    pb.environment().put("MX_REFIT_STAGE_RECORD", "0");
    Process p = pb.start();
    String stdout;
    try (InputStream in = p.getInputStream()) {
      stdout = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    int rc = p.waitFor();
    if (rc != 0) {
      throw new MxException(
          "modelexpress bench: "
              + python
              + " "
              + script.getFileName()
              + " exited "
              + rc
              + " on "
              + request
              + " (its errors are above)");
    }
    String[] lines = stdout.strip().split("\n");
    return JSON.readTree(lines[lines.length - 1]);
  }

  /**
   * Both receivers must refit the same plan: ModelExpress's planner on the request must give what
   * mx's planner gives in ModelExpress mode (descriptors and bytes), or the timings compare
   * different work.
   */
  private static void requireSamePlan(
      JsonNode me, Capture capture, Map<String, SourceInfo> sources, Path request) {
    TransferPlan plan =
        new ReshardPlanner()
            .plan(
                capture.result(),
                sources,
                PlanOptions.fromSettings(BoundingMode.MODELEXPRESS, Settings.system()));
    long descriptors = me.get("descriptor_count").asLong();
    long bytes = me.get("bytes_planned").asLong();
    if (descriptors != plan.descriptorCount() || bytes != plan.bytesPlanned()) {
      throw new MxException(
          "modelexpress bench: ModelExpress planned "
              + descriptors
              + " descriptors, "
              + bytes
              + " bytes for "
              + request
              + "; mx plan gives "
              + plan.descriptorCount()
              + ", "
              + plan.bytesPlanned()
              + ": the two receivers would not refit the same plan");
    }
  }

  private static void copyResource(String name, Path to) throws IOException {
    try (InputStream in = ModelExpressBench.class.getResourceAsStream(RESOURCES + name)) {
      if (in == null) {
        throw new IOException("resource " + RESOURCES + name + " is missing from mx-bench's jar");
      }
      Files.copy(in, to);
    }
  }

  private static void deleteTree(Path dir) throws IOException {
    try (var walk = Files.walk(dir)) {
      for (Path p : walk.sorted(java.util.Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    }
  }
}
