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
 *
 * <p>vLLM's alignment rule: each member of a fused parameter ({@code q, k, v} in {@code qkv_proj};
 * {@code gate, up} in {@code gate_up_proj} and each expert's {@code w13_weight}) is quantized on a
 * block grid of its own, never one block across two members. Where vLLM would refuse the layout
 * (under tensor parallelism or in a fused parameter, an output partition, that is a member's rows,
 * not a multiple of the block; under tensor parallelism, a row-parallel input partition, the local
 * columns of {@code o_proj}, {@code down_proj} or {@code w2_weight}, not a multiple of the block)
 * the layout is refused naming the parameter, the member, the partition size and the block, unless
 * partial blocks were asked for: then each member's last block row (and the last block column) is
 * partial. The scales of a parameter of members {@code m_1 .. m_k} rows have {@code sum
 * ceil(m_i/block)} block rows, each member's in order.
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

  /**
   * The scale tensors of a format: their name suffix, dtype, shape given a weight's shape and its
   * members' rows, and whether the format cuts square blocks (then vLLM's alignment rule applies).
   * {@link #blocks} is {@code fp8-block}'s; the quantizer's module declares the others.
   */
  public record Scales(
      String suffix,
      DType dtype,
      boolean blockGrid,
      java.util.function.BiFunction<Shape, long[], Shape> shape) {
    /**
     * {@code fp8-block}: f32 {@code <name>_scale_inv} of {@link #scaleShape(Shape, int, long[])}.
     */
    public static Scales blocks(int block) {
      return new Scales(SCALE_SUFFIX, DType.F32, true, (w, m) -> scaleShape(w, block, m));
    }
  }

  private final int block;
  private final Map<String, ParamSpec> received;
  private final Map<String, String> scales;
  private final Map<String, ParamSpec> engine;
  private final Map<String, long[]> members;
  private final boolean partialBlocks;

  private Fp8BlockLayout(
      VllmLayout layout, int block, Set<String> quantized, boolean partialBlocks, Scales format) {
    Map<String, ParamSpec> received = layout.params();
    this.block = block;
    this.partialBlocks = partialBlocks;
    this.received = Collections.unmodifiableMap(new LinkedHashMap<>(received));
    Map<String, long[]> m = new LinkedHashMap<>();
    for (String param : quantized) {
      long[] rows = memberRows(layout, param, block, partialBlocks || !format.blockGrid());
      m.put(param, rows);
    }
    this.members = Collections.unmodifiableMap(m);
    Map<String, String> s = new LinkedHashMap<>();
    Map<String, ParamSpec> e = new LinkedHashMap<>();
    for (Map.Entry<String, ParamSpec> p : received.entrySet()) {
      if (!quantized.contains(p.getKey())) {
        e.put(p.getKey(), p.getValue());
        continue;
      }
      String scale = p.getKey() + format.suffix();
      s.put(p.getKey(), scale);
      e.put(p.getKey(), new ParamSpec(p.getValue().shape(), DType.F8_E4M3FN));
      e.put(
          scale,
          new ParamSpec(
              format.shape().apply(p.getValue().shape(), members.get(p.getKey())), format.dtype()));
    }
    this.scales = Collections.unmodifiableMap(s);
    this.engine = Collections.unmodifiableMap(e);
  }

  /**
   * The default rule: every parameter loaded only from {@link #LINEAR_WEIGHTS}, under vLLM's
   * alignment rule.
   *
   * @throws LayoutException naming a parameter vLLM would refuse at this block size
   */
  public static Fp8BlockLayout defaults(VllmLayout layout, int block) {
    return defaults(layout, block, false);
  }

  /**
   * As {@link #defaults(VllmLayout, int)}; with {@code partialBlocks} a member whose size is not a
   * multiple of the block ends in a partial block instead of failing (for small test models).
   */
  public static Fp8BlockLayout defaults(VllmLayout layout, int block, boolean partialBlocks) {
    return defaults(layout, block, partialBlocks, Scales.blocks(block));
  }

  /** As {@link #defaults(VllmLayout, int, boolean)}, the scales of {@code format}. */
  public static Fp8BlockLayout defaults(
      VllmLayout layout, int block, boolean partialBlocks, Scales format) {
    checkBlock(block);
    Map<String, Set<TensorRole>> roles = rolesByParameter(layout);
    Set<String> quantized = new LinkedHashSet<>();
    for (String param : layout.params().keySet()) {
      Set<TensorRole> r = roles.get(param);
      if (r != null && !r.isEmpty() && LINEAR_WEIGHTS.containsAll(r)) {
        quantized.add(param);
      }
    }
    return new Fp8BlockLayout(layout, block, quantized, partialBlocks, format);
  }

  /**
   * The parameters whose names match one of {@code globs} ({@code *} any run of characters, {@code
   * ?} one).
   *
   * @throws LayoutException naming a glob that matches no parameter of the layout, or a matched
   *     parameter with fewer than two dimensions, or a parameter vLLM would refuse at this block
   *     size
   */
  public static Fp8BlockLayout matching(VllmLayout layout, int block, List<String> globs) {
    return matching(layout, block, globs, false);
  }

  /** As {@link #matching(VllmLayout, int, List)}, partial blocks per member allowed or not. */
  public static Fp8BlockLayout matching(
      VllmLayout layout, int block, List<String> globs, boolean partialBlocks) {
    return matching(layout, block, globs, partialBlocks, Scales.blocks(block));
  }

  /** As {@link #matching(VllmLayout, int, List, boolean)}, the scales of {@code format}. */
  public static Fp8BlockLayout matching(
      VllmLayout layout, int block, List<String> globs, boolean partialBlocks, Scales format) {
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
    return new Fp8BlockLayout(layout, block, quantized, partialBlocks, format);
  }

  /** The shape of the scales of a weight of {@code shape}. */
  public static Shape scaleShape(Shape shape, int block) {
    return scaleShape(shape, block, new long[] {shape.dim(shape.rank() - 2)});
  }

  /**
   * The shape of the scales of a weight of {@code shape} whose matrices hold members of {@code
   * memberRows} rows each, each on its own grid: {@code sum ceil(m_i/block)} block rows.
   */
  public static Shape scaleShape(Shape shape, int block, long[] memberRows) {
    long[] d = shape.dims().clone();
    int r = d.length;
    long blockRows = 0;
    for (long m : memberRows) {
      blockRows += (m + block - 1) / block;
    }
    d[r - 2] = blockRows;
    d[r - 1] = (d[r - 1] + block - 1) / block;
    return Shape.of(d);
  }

  /**
   * The rows of each member of {@code param}'s matrices, in order (one member when it is not
   * fused), from the copies that load it; checked against vLLM's alignment rule unless {@code
   * partialBlocks}.
   */
  private static long[] memberRows(
      VllmLayout layout, String param, int block, boolean partialBlocks) {
    Shape shape = layout.params().get(param).shape();
    int rank = shape.rank();
    long rows = shape.dim(rank - 2);
    long cols = shape.dim(rank - 1);
    // Member row start -> {rows, the first source loading it, its source's rows}; the same in
    // every matrix.
    java.util.TreeMap<Long, Object[]> starts = new java.util.TreeMap<>();
    long inputPerPartition = cols;
    long inputSize = cols;
    for (RecordedCopy c : layout.copies()) {
      if (!c.paramName().equals(param)) {
        continue;
      }
      Shape d = c.destShape();
      Shape src = layout.model().tensor(c.srcName()).shape();
      long start = (c.destOffset() % (rows * cols)) / cols;
      long count = d.rank() >= 2 ? d.numel() / d.dim(d.rank() - 1) : 1;
      long srcRows = src.rank() >= 2 ? src.numel() / src.dim(src.rank() - 1) : 1;
      starts.putIfAbsent(start, new Object[] {count, c.srcName(), srcRows});
      inputSize = Math.max(inputSize, src.dim(src.rank() - 1));
    }
    List<Long> counts = new ArrayList<>();
    List<String> sources = new ArrayList<>();
    long outputSize = 0;
    long next = 0;
    for (Map.Entry<Long, Object[]> e : starts.entrySet()) {
      if (e.getKey() != next) {
        break; // not a partition of the rows (a column slice): one member
      }
      counts.add((Long) e.getValue()[0]);
      sources.add((String) e.getValue()[1]);
      outputSize += (Long) e.getValue()[2];
      next += (Long) e.getValue()[0];
    }
    if (next != rows) {
      counts = List.of(rows);
      sources = List.of(param);
      outputSize = rows;
    }
    if (!partialBlocks) {
      checkAlignment(
          param,
          layout.topology().tp(),
          shape.rank() > 2,
          counts,
          sources,
          outputSize,
          inputSize,
          inputPerPartition,
          block);
    }
    return counts.stream().mapToLong(Long::longValue).toArray();
  }

  /**
   * vLLM's rule ({@code validate_fp8_block_shape}; the fused-MoE method's for expert stacks): under
   * tensor parallelism a row-parallel input partition is a multiple of the block; the output
   * partitions (each member's rows) are too when the rows are split by tensor parallelism or the
   * parameter is fused, the last member of a fused parameter not split excepted (but not in an
   * expert stack: the fused-MoE method checks gate and up alike).
   */
  private static void checkAlignment(
      String param,
      int tp,
      boolean experts,
      List<Long> counts,
      List<String> sources,
      long outputSize,
      long inputSize,
      long inputPerPartition,
      int block) {
    boolean rowParallel = tp > 1 && inputSize / inputPerPartition == tp;
    if (rowParallel && inputPerPartition % block != 0) {
      throw refused(
          param, "its row-parallel input partition is " + inputPerPartition + " columns", block);
    }
    long local = counts.stream().mapToLong(Long::longValue).sum();
    boolean tpSplit = tp > 1 && outputSize / local == tp;
    boolean merged = counts.size() > 1;
    if (!(tpSplit || merged)) {
      return;
    }
    int checked = !experts && !tpSplit ? counts.size() - 1 : counts.size();
    for (int i = 0; i < checked; i++) {
      if (counts.get(i) % block != 0) {
        throw refused(
            param,
            (merged ? "its member '" + sources.get(i) + "'" : "it")
                + " has an output partition of "
                + counts.get(i)
                + " rows",
            block);
      }
    }
  }

  private static LayoutException refused(String param, String what, int block) {
    return new LayoutException(
        "fp8 block quantization of '"
            + param
            + "': "
            + what
            + ", not a multiple of the block "
            + block
            + "; vLLM refuses this layout (partial blocks per member quantize it anyway)");
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

  /**
   * Quantized weight name → the rows of each member of its matrices, in order (one entry when it is
   * not fused); each member is quantized on its own block grid.
   */
  public Map<String, long[]> members() {
    return members;
  }

  /** Whether members whose size is not a multiple of the block end in a partial block. */
  public boolean partialBlocks() {
    return partialBlocks;
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
