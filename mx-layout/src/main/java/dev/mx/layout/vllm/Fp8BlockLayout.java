package dev.mx.layout.vllm;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.plan.RecordedCopy;
import dev.mx.api.refit.ParamSpec;
import dev.mx.layout.LayoutException;
import dev.mx.layout.model.GlobalTensor;
import dev.mx.layout.model.TensorRole;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Which parameters of one vLLM rank an engine serving FP8 block-quantized weights holds as {@code
 * float8_e4m3fn}, and the engine's parameters then: each quantized weight in e4m3fn followed by its
 * f32 {@code <name>_scale_inv} of shape {@code [..., ceil(rows/block), ceil(cols/block)]} (vLLM's
 * names: {@code qkv_proj.weight_scale_inv}, {@code w13_weight_scale_inv}); everything else keeps
 * the dtype the receiver pulls.
 *
 * <p>The default rule reads the tensor roles of the sources each parameter is loaded from: a
 * parameter is quantized when every one of them is a linear weight of attention or the MLP, experts
 * included ({@link #LINEAR_WEIGHTS}), so fused {@code qkv_proj} and {@code gate_up_proj} are
 * quantized as the engine holds them. Embeddings, {@code lm_head}, norms, biases and the MoE router
 * stay as they are.
 */
public final class Fp8BlockLayout {
  /** The suffix vLLM gives a block-quantized weight's scales. */
  public static final String SCALE_SUFFIX = "_scale_inv";

  /** The roles whose parameters the default rule quantizes. */
  public static final Set<TensorRole> LINEAR_WEIGHTS =
      Collections.unmodifiableSet(
          EnumSet.of(
              TensorRole.Q_PROJ,
              TensorRole.K_PROJ,
              TensorRole.V_PROJ,
              TensorRole.O_PROJ,
              TensorRole.GATE_PROJ,
              TensorRole.UP_PROJ,
              TensorRole.DOWN_PROJ,
              TensorRole.EXPERT_GATE_PROJ,
              TensorRole.EXPERT_UP_PROJ,
              TensorRole.EXPERT_DOWN_PROJ));

  private final int block;
  private final Map<String, ParamSpec> received;
  private final Map<String, String> scales;
  private final Map<String, ParamSpec> engine;

  private Fp8BlockLayout(int block, Map<String, ParamSpec> received, Set<String> quantized) {
    this.block = block;
    this.received = Collections.unmodifiableMap(new LinkedHashMap<>(received));
    Map<String, String> s = new LinkedHashMap<>();
    Map<String, ParamSpec> e = new LinkedHashMap<>();
    for (Map.Entry<String, ParamSpec> p : received.entrySet()) {
      if (!quantized.contains(p.getKey())) {
        e.put(p.getKey(), p.getValue());
        continue;
      }
      String scale = p.getKey() + SCALE_SUFFIX;
      s.put(p.getKey(), scale);
      e.put(p.getKey(), new ParamSpec(p.getValue().shape(), DType.F8_E4M3FN));
      e.put(scale, new ParamSpec(scaleShape(p.getValue().shape(), block), DType.F32));
    }
    this.scales = Collections.unmodifiableMap(s);
    this.engine = Collections.unmodifiableMap(e);
  }

  /** The default rule: every parameter loaded only from {@link #LINEAR_WEIGHTS}. */
  public static Fp8BlockLayout defaults(VllmLayout layout, int block) {
    checkBlock(block);
    Map<String, Set<TensorRole>> roles = rolesByParameter(layout);
    Set<String> quantized = new LinkedHashSet<>();
    for (String param : layout.params().keySet()) {
      Set<TensorRole> r = roles.get(param);
      if (r != null && !r.isEmpty() && LINEAR_WEIGHTS.containsAll(r)) {
        quantized.add(param);
      }
    }
    return new Fp8BlockLayout(block, layout.params(), quantized);
  }

  /**
   * The parameters whose names match one of {@code globs} ({@code *} any run of characters, {@code
   * ?} one).
   *
   * @throws LayoutException naming a glob that matches no parameter of the layout, or a matched
   *     parameter with fewer than two dimensions
   */
  public static Fp8BlockLayout matching(VllmLayout layout, int block, List<String> globs) {
    checkBlock(block);
    Set<String> quantized = new LinkedHashSet<>();
    for (String glob : globs) {
      Pattern p = globPattern(glob);
      List<String> hits = new ArrayList<>();
      layout
          .params()
          .forEach(
              (name, spec) -> {
                if (p.matcher(name).matches()) {
                  if (spec.shape().rank() < 2) {
                    throw new LayoutException(
                        "fp8 parameter rule '"
                            + glob
                            + "' names '"
                            + name
                            + "' of shape "
                            + spec.shape()
                            + ": only matrices (or stacks of them) are block-quantized");
                  }
                  hits.add(name);
                }
              });
      if (hits.isEmpty()) {
        throw new LayoutException(
            "fp8 parameter rule '"
                + glob
                + "' names no parameter of "
                + layout.model().modelName()
                + " under inference "
                + layout.topology());
      }
      quantized.addAll(hits);
    }
    return new Fp8BlockLayout(block, layout.params(), quantized);
  }

  /** The shape of the scales of a weight of {@code shape}. */
  public static Shape scaleShape(Shape shape, int block) {
    long[] d = shape.dims().clone();
    int r = d.length;
    d[r - 2] = (d[r - 2] + block - 1) / block;
    d[r - 1] = (d[r - 1] + block - 1) / block;
    return Shape.of(d);
  }

  private static void checkBlock(int block) {
    if (block <= 0) {
      throw new LayoutException("fp8 block size must be positive, got " + block);
    }
  }

  private static Pattern globPattern(String glob) {
    StringBuilder re = new StringBuilder();
    for (char c : glob.toCharArray()) {
      switch (c) {
        case '*' -> re.append(".*");
        case '?' -> re.append('.');
        default -> re.append(Pattern.quote(String.valueOf(c)));
      }
    }
    return Pattern.compile(re.toString());
  }

  /** Per parameter, the roles of the global tensors copied into it. */
  private static Map<String, Set<TensorRole>> rolesByParameter(VllmLayout layout) {
    Map<String, Set<TensorRole>> roles = new LinkedHashMap<>();
    Map<String, TensorRole> bySource = new LinkedHashMap<>();
    for (GlobalTensor t : layout.model().tensors()) {
      bySource.put(t.name(), t.role());
    }
    for (RecordedCopy c : layout.copies()) {
      TensorRole role = bySource.get(c.srcName());
      if (role != null) {
        roles.computeIfAbsent(c.paramName(), k -> EnumSet.noneOf(TensorRole.class)).add(role);
      }
    }
    return roles;
  }

  public int block() {
    return block;
  }

  /** The parameters as the receiver pulls and verifies them (the layout's own). */
  public Map<String, ParamSpec> received() {
    return received;
  }

  /** Quantized weight name → its scales' name, in load order. */
  public Map<String, String> scales() {
    return scales;
  }

  /** The engine's parameters: quantized weights in e4m3fn, each followed by its f32 scales. */
  public Map<String, ParamSpec> engine() {
    return engine;
  }
}
