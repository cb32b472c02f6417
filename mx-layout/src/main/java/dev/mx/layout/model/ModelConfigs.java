package dev.mx.layout.model;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mx.api.DType;
import dev.mx.layout.LayoutException;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.SortedSet;
import java.util.TreeSet;

/**
 * Reads Hugging Face {@code config.json} files into {@link ModelArchitecture}s, and looks up the
 * configs mx ships by model name ({@code llama-3.2-1b}, {@code qwen3-30b-a3b}, {@code tiny-llama},
 * ...).
 */
public final class ModelConfigs {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String RESOURCE_DIR = "/dev/mx/layout/models/";

  /** Configs shipped as resources: real public models, then tiny ones for tests and quick demos. */
  public static final List<String> BUNDLED =
      List.of(
          "llama-3.2-1b",
          "qwen2.5-0.5b",
          "qwen3-0.6b",
          "qwen3-30b-a3b",
          "deepseek-v3",
          "kimi-k2",
          "tiny-llama",
          "tiny-mistral",
          "tiny-qwen2",
          "tiny-qwen3",
          "tiny-qwen3-moe",
          "tiny-deepseek");

  private ModelConfigs() {}

  /**
   * A bundled model by name (case-insensitive; a Hugging Face id such as {@code Qwen/Qwen3-0.6B}
   * works too), else a path to a {@code config.json} or to a directory holding one.
   */
  public static ModelArchitecture load(String nameOrPath) {
    String bare = nameOrPath.substring(nameOrPath.lastIndexOf('/') + 1).toLowerCase(Locale.ROOT);
    if (BUNDLED.contains(bare)) {
      return bundled(bare);
    }
    Path p = Path.of(nameOrPath);
    if (Files.isDirectory(p)) {
      p = p.resolve("config.json");
    }
    if (Files.isRegularFile(p)) {
      return parse(p);
    }
    throw new LayoutException(
        "unknown model '"
            + nameOrPath
            + "': not a bundled model ("
            + String.join(", ", BUNDLED)
            + ") and no config.json at "
            + p.toAbsolutePath());
  }

  /** One of {@link #BUNDLED}. */
  public static ModelArchitecture bundled(String name) {
    String resource = RESOURCE_DIR + name + ".json";
    try (InputStream in = ModelConfigs.class.getResourceAsStream(resource)) {
      if (in == null) {
        throw new LayoutException(
            "no bundled model '" + name + "'; bundled: " + String.join(", ", BUNDLED));
      }
      return parse(
          new String(in.readAllBytes(), StandardCharsets.UTF_8), "resource:" + resource, name);
    } catch (IOException e) {
      throw new UncheckedIOException("reading " + resource, e);
    }
  }

  /** Parses a {@code config.json} file; the model is named after its directory. */
  public static ModelArchitecture parse(Path configFile) {
    String json;
    try {
      json = Files.readString(configFile);
    } catch (IOException e) {
      throw new LayoutException(
          "cannot read model config " + configFile + ": " + e.getMessage(), e);
    }
    Path dir = configFile.toAbsolutePath().getParent();
    String name =
        dir == null || dir.getFileName() == null
            ? configFile.toString()
            : dir.getFileName().toString();
    return parse(json, configFile.toString(), name);
  }

  /**
   * Parses config JSON.
   *
   * @param source where the JSON came from, named in every error
   * @param modelName the name the architecture reports
   * @throws LayoutException naming the key and the source when a key is missing, mistyped or
   *     inconsistent
   */
  public static ModelArchitecture parse(String json, String source, String modelName) {
    JsonNode root;
    try {
      root = JSON.readTree(json);
    } catch (JsonProcessingException e) {
      throw new LayoutException(source + ": not valid JSON: " + e.getOriginalMessage(), e);
    }
    if (root == null || !root.isObject()) {
      throw new LayoutException(source + ": a model config must be a JSON object");
    }
    return new Reader(root, source).read(modelName);
  }

  /** Reads keys of one config, naming the key and source in every error. */
  private record Reader(JsonNode root, String source) {

    ModelArchitecture read(String modelName) {
      ArchitectureKind kind = architecture();
      int hidden = positiveInt("hidden_size");
      int heads = positiveInt("num_attention_heads");
      int kvHeads =
          root.hasNonNull("num_key_value_heads") ? positiveInt("num_key_value_heads") : heads;
      int layers = positiveInt("num_hidden_layers");
      int vocab = positiveInt("vocab_size");
      if (heads % kvHeads != 0) {
        throw error(
            "num_key_value_heads",
            "num_attention_heads " + heads + " is not divisible by num_key_value_heads " + kvHeads);
      }
      ModelArchitecture.Mla mla = kind.mla() ? mla() : null;
      int headDim;
      if (mla != null) {
        // MLA has no head_dim key; the per-head query/key width is what attention heads span.
        headDim = mla.qkHeadDim();
      } else if (root.hasNonNull("head_dim")) {
        headDim = positiveInt("head_dim");
      } else {
        if (hidden % heads != 0) {
          throw error(
              "num_attention_heads",
              "hidden_size "
                  + hidden
                  + " is not divisible by num_attention_heads "
                  + heads
                  + " and there is no head_dim");
        }
        headDim = hidden / heads;
      }
      boolean tie = bool("tie_word_embeddings", false);
      boolean bias = kind.alwaysQkvBias() || bool("attention_bias", false);
      if (bool("mlp_bias", false)) {
        throw error("mlp_bias", "MLP biases are not supported");
      }
      DType dtype = dtype();
      int experts = 0;
      int moeIntermediate = 0;
      int sparseStep = 1;
      SortedSet<Integer> mlpOnly = new TreeSet<>();
      int shared = 0;
      int firstDense = 0;
      boolean routerBias = false;
      if (kind.mla()) {
        experts = positiveInt("n_routed_experts");
        moeIntermediate = positiveInt("moe_intermediate_size");
        shared = root.hasNonNull("n_shared_experts") ? positiveInt("n_shared_experts") : 0;
        firstDense = nonNegativeInt("first_k_dense_replace", layers);
        if (root.hasNonNull("moe_layer_freq") && positiveInt("moe_layer_freq") != 1) {
          throw error("moe_layer_freq", "only 1 (every layer after the dense ones) is supported");
        }
        // noaux_tc routing (DeepSeek-V3, Kimi-K2) carries a per-expert score correction bias.
        routerBias =
            root.hasNonNull("topk_method") && root.get("topk_method").asText().equals("noaux_tc");
      } else if (kind.moe()) {
        experts = positiveInt("num_experts");
        moeIntermediate = positiveInt("moe_intermediate_size");
        sparseStep =
            root.hasNonNull("decoder_sparse_step") ? positiveInt("decoder_sparse_step") : 1;
        mlpOnly = layerList("mlp_only_layers", layers);
      }
      boolean anyDense = false;
      for (int l = 0; l < layers; l++) {
        boolean sparse =
            kind.mla()
                ? l >= firstDense
                : kind.moe() && !mlpOnly.contains(l) && (l + 1) % sparseStep == 0;
        anyDense |= !sparse;
      }
      int intermediate =
          anyDense || root.hasNonNull("intermediate_size") ? positiveInt("intermediate_size") : 0;
      var dims =
          new ModelArchitecture.Dimensions(
              hidden,
              heads,
              kvHeads,
              headDim,
              intermediate,
              layers,
              vocab,
              tie,
              bias,
              dtype,
              experts,
              moeIntermediate,
              sparseStep,
              mlpOnly,
              mla,
              shared,
              firstDense,
              routerBias);
      return new ModelArchitecture(modelName, source, kind, dims);
    }

    private ModelArchitecture.Mla mla() {
      return new ModelArchitecture.Mla(
          positiveInt("q_lora_rank"),
          positiveInt("kv_lora_rank"),
          positiveInt("qk_nope_head_dim"),
          positiveInt("qk_rope_head_dim"),
          positiveInt("v_head_dim"));
    }

    /** An integer in {@code [0, max]}. */
    private int nonNegativeInt(String key, int max) {
      JsonNode n = root.get(key);
      if (n == null || n.isNull()) {
        return 0;
      }
      if (!n.isIntegralNumber() || !n.canConvertToInt() || n.intValue() < 0 || n.intValue() > max) {
        throw error(key, "must be an integer in [0, " + max + "], got " + n);
      }
      return n.intValue();
    }

    private ArchitectureKind architecture() {
      JsonNode a = root.get("architectures");
      if (a == null || a.isNull()) {
        throw error("architectures", "missing");
      }
      if (!a.isArray() || a.isEmpty() || !a.get(0).isTextual()) {
        throw error("architectures", "must be a non-empty list of names, got " + a);
      }
      String name = a.get(0).asText();
      return ArchitectureKind.byHfName(name)
          .orElseThrow(
              () ->
                  error(
                      "architectures",
                      "unsupported architecture '"
                          + name
                          + "'; supported: "
                          + ArchitectureKind.supportedNames()));
    }

    /**
     * Upper bounds far above any real model (the largest vocabularies are ~2^18) that keep sizes
     * derived from them from overflowing or asking for terabytes: a config beyond them is an error
     * naming the key.
     */
    private static final java.util.Map<String, Integer> LIMITS =
        java.util.Map.ofEntries(
            java.util.Map.entry("vocab_size", 1 << 24),
            java.util.Map.entry("hidden_size", 1 << 17),
            java.util.Map.entry("intermediate_size", 1 << 20),
            java.util.Map.entry("moe_intermediate_size", 1 << 20),
            java.util.Map.entry("num_hidden_layers", 1 << 12),
            java.util.Map.entry("num_attention_heads", 1 << 14),
            java.util.Map.entry("num_key_value_heads", 1 << 14),
            java.util.Map.entry("head_dim", 1 << 14),
            java.util.Map.entry("num_experts", 1 << 16),
            java.util.Map.entry("n_routed_experts", 1 << 16),
            java.util.Map.entry("q_lora_rank", 1 << 17),
            java.util.Map.entry("kv_lora_rank", 1 << 17),
            java.util.Map.entry("qk_nope_head_dim", 1 << 14),
            java.util.Map.entry("qk_rope_head_dim", 1 << 14),
            java.util.Map.entry("v_head_dim", 1 << 14));

    private int positiveInt(String key) {
      int v = positiveIntUnbounded(key);
      Integer limit = LIMITS.get(key);
      if (limit != null && v > limit) {
        throw error(key, v + " exceeds the limit of " + limit);
      }
      return v;
    }

    private int positiveIntUnbounded(String key) {
      JsonNode n = root.get(key);
      if (n == null || n.isNull()) {
        throw error(key, "missing");
      }
      if (n.isIntegralNumber() && !n.canConvertToInt() && n.bigIntegerValue().signum() > 0) {
        Integer limit = LIMITS.get(key);
        throw error(
            key, n + " exceeds the limit of " + (limit == null ? Integer.MAX_VALUE : limit));
      }
      if (!n.isIntegralNumber() || !n.canConvertToInt()) {
        throw error(key, "must be an integer, got " + n);
      }
      int v = n.intValue();
      if (v <= 0) {
        throw error(key, "must be positive, got " + v);
      }
      return v;
    }

    private boolean bool(String key, boolean absent) {
      JsonNode n = root.get(key);
      if (n == null || n.isNull()) {
        return absent;
      }
      if (!n.isBoolean()) {
        throw error(key, "must be true or false, got " + n);
      }
      return n.booleanValue();
    }

    private DType dtype() {
      String key = root.hasNonNull("torch_dtype") ? "torch_dtype" : "dtype";
      JsonNode n = root.get(key);
      if (n == null || n.isNull()) {
        return null;
      }
      try {
        return DType.parse(n.asText());
      } catch (IllegalArgumentException e) {
        throw new LayoutException(source + ": key '" + key + "': " + e.getMessage(), e);
      }
    }

    private SortedSet<Integer> layerList(String key, int layers) {
      SortedSet<Integer> out = new TreeSet<>();
      JsonNode n = root.get(key);
      if (n == null || n.isNull()) {
        return out;
      }
      if (!n.isArray()) {
        throw error(key, "must be a list of layer numbers, got " + n);
      }
      for (JsonNode e : n) {
        if (!e.isIntegralNumber() || e.intValue() < 0 || e.intValue() >= layers) {
          throw error(key, "entry " + e + " is not a layer number in [0, " + layers + ")");
        }
        out.add(e.intValue());
      }
      return out;
    }

    private LayoutException error(String key, String what) {
      return new LayoutException(source + ": key '" + key + "': " + what);
    }
  }
}
