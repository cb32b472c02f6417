package dev.mx.layout.vllm;

import dev.mx.api.Box;
import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.plan.CaptureResult;
import dev.mx.api.plan.OpSpec;
import dev.mx.api.plan.RecordedCopy;
import dev.mx.api.refit.Capture;
import dev.mx.api.refit.GeometrySource;
import dev.mx.api.refit.ManifestEntry;
import dev.mx.api.refit.ParamSpec;
import dev.mx.layout.LayoutException;
import dev.mx.layout.model.GlobalTensor;
import dev.mx.layout.model.ModelArchitecture;
import dev.mx.layout.model.ScaleTiles;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A vLLM rank whose quantized parameters ({@link Fp8BlockLayout}) are loaded from quantized
 * sources: the publishers offer each such global weight already in {@code float8_e4m3fn} together
 * with its scale tensor ({@code <weight><suffix>}, {@link ScaleTiles}), and the receiver pulls both
 * into the engine's layout unchanged: the weight's copies as the plain layout records them, in
 * e4m3fn, and the scales re-sliced with their tiles (each fused member's scales on its own grid,
 * after the previous member's). Nothing is re-quantized, and every byte is verified like any other.
 *
 * <p>Fails closed: a quantized weight offered without its scales or the reverse, a weight offered
 * in another dtype than e4m3fn, scales of another dtype or shape, scales of a weight the engine
 * does not quantize, an fp8 source of a parameter the engine holds unquantized, or a slice of this
 * rank that cuts a tile of its source's scales: each a {@link LayoutException} naming the tensor,
 * before any byte moves.
 */
public final class QuantizedSourceGeometry implements GeometrySource {
  /** Scale suffixes of the formats mx knows: vLLM's block scales and the per-tensor/MX ones. */
  private static final List<String> OTHER_SUFFIXES = List.of("_scale_inv", "_scale");

  private final VllmLayout layout;
  private final Fp8BlockLayout quantized;
  private final ScaleTiles tiles;

  /** Global weight → the quantized parameter it loads into. */
  private final Map<String, String> sourceToParam = new LinkedHashMap<>();

  /** Scale tensor name → its global weight. */
  private final Map<String, String> scaleToSource = new LinkedHashMap<>();

  /**
   * @param layout the rank as vLLM lays it out
   * @param quantized which of its parameters the engine holds in e4m3fn, with its scale tensors
   * @param tiles how the publishers' scales tile each global weight
   */
  public QuantizedSourceGeometry(VllmLayout layout, Fp8BlockLayout quantized, ScaleTiles tiles) {
    this.layout = layout;
    this.quantized = quantized;
    this.tiles = tiles;
    for (RecordedCopy c : layout.copies()) {
      if (quantized.scales().containsKey(c.paramName())) {
        sourceToParam.put(c.srcName(), c.paramName());
        scaleToSource.put(tiles.scaleName(c.srcName()), c.srcName());
      }
    }
  }

  /** The engine's parameters: what the receiver pulls and installs. */
  public Map<String, ParamSpec> params() {
    return quantized.engine();
  }

  /** The global weights offered quantized, each with its scales: every one the engine quantizes. */
  public Set<String> quantizedSources() {
    return java.util.Collections.unmodifiableSet(sourceToParam.keySet());
  }

  /**
   * A manifest offering every global tensor of {@code model}: those {@code quantized} accepts in
   * e4m3fn, each followed by its scales, the rest in {@code dtype}; what a trainer job publishing
   * quantized sources offers.
   */
  public static List<ManifestEntry> manifest(
      ModelArchitecture model,
      DType dtype,
      ScaleTiles tiles,
      java.util.function.Predicate<GlobalTensor> quantized) {
    List<ManifestEntry> m = new ArrayList<>();
    for (GlobalTensor t : model.tensors()) {
      if (quantized.test(t)) {
        m.add(new ManifestEntry(t.name(), DType.F8_E4M3FN, t.shape()));
        m.add(
            new ManifestEntry(
                tiles.scaleName(t.name()), tiles.dtype(), tiles.scaleShape(t.shape())));
      } else {
        m.add(new ManifestEntry(t.name(), dtype, t.shape()));
      }
    }
    return m;
  }

  @Override
  public Capture capture(List<ManifestEntry> manifest) {
    Map<String, ManifestEntry> offered = new LinkedHashMap<>();
    manifest.forEach(e -> offered.put(e.name(), e));
    List<ManifestEntry> plain = new ArrayList<>();
    List<RecordedCopy> copies = new ArrayList<>();
    Set<String> done = new LinkedHashSet<>();
    for (ManifestEntry e : manifest) {
      String weight = scaleToSource.get(e.name());
      if (weight == null && !sourceToParam.containsKey(e.name())) {
        String base =
            e.name().endsWith(tiles.suffix())
                ? e.name().substring(0, e.name().length() - tiles.suffix().length())
                : null;
        if (base != null && layout.model().find(base).isPresent()) {
          if (!layout.copiesOf(base).isEmpty()) {
            throw refused(
                e.name(),
                "holds scales of a weight the engine does not quantize; only the linear weights"
                    + " of attention and the MLP are installed quantized");
          }
          continue; // the scales of a tensor only other ranks load
        }
        if (e.dtype() == DType.F8_E4M3FN && !layout.copiesOf(e.name()).isEmpty()) {
          throw refused(
              e.name(),
              "is offered as float8_e4m3fn, but the engine holds it unquantized (in "
                  + layout.dtype()
                  + "); a dequantizing install is not built: publish it in "
                  + layout.dtype());
        }
        plain.add(e);
        continue;
      }
      String source = weight != null ? weight : e.name();
      if (!done.add(source)) {
        continue;
      }
      ManifestEntry w = offered.get(source);
      ManifestEntry s = offered.get(tiles.scaleName(source));
      if (w == null || s == null) {
        throw refused(
            source,
            w == null
                ? "has its scales '" + s.name() + "' offered but not the weight itself"
                : "is offered without its scales '"
                    + tiles.scaleName(source)
                    + "'"
                    + (w.dtype() == DType.F8_E4M3FN
                        ? otherScales(offered, source)
                        : " (and in "
                            + w.dtype()
                            + ": the engine installs quantized sources unchanged, it does not"
                            + " quantize them)"));
      }
      copies.addAll(copiesOf(w, s));
    }
    Capture rest = layout.capture(plain);
    copies.addAll(rest.result().copies());
    CaptureResult r = rest.result();
    return new Capture(
        new CaptureResult(copies, r.unsupported(), r.unattributed(), r.unsupportedReasons()),
        quantized.engine(),
        rest.padding());
  }

  /**
   * A hint when {@code source} is offered with scales under another format's suffix: the trainers
   * publish another format than this receiver installs.
   */
  private String otherScales(Map<String, ManifestEntry> offered, String source) {
    for (String suffix : OTHER_SUFFIXES) {
      ManifestEntry other = offered.get(source + suffix);
      if (!suffix.equals(tiles.suffix()) && other != null) {
        return "; it is offered with '"
            + other.name()
            + "' ("
            + other.dtype()
            + " "
            + other.globalShape()
            + "): the trainers publish another format than this receiver installs";
      }
    }
    return "";
  }

  /** The weight's copies retyped to e4m3fn, and its scales' copies. */
  private List<RecordedCopy> copiesOf(ManifestEntry weight, ManifestEntry scales) {
    Shape shape = layout.model().tensor(weight.name()).shape();
    if (!weight.globalShape().equals(shape)) {
      throw refused(
          weight.name(), "is offered with shape " + weight.globalShape() + ", expected " + shape);
    }
    if (weight.dtype() != DType.F8_E4M3FN) {
      throw refused(
          weight.name(),
          "is offered as "
              + weight.dtype()
              + " beside its scales '"
              + scales.name()
              + "'; a quantized source is float8_e4m3fn");
    }
    Shape scaleShape = tiles.scaleShape(shape);
    if (scales.dtype() != tiles.dtype() || !scales.globalShape().equals(scaleShape)) {
      throw refused(
          scales.name(),
          "is offered as "
              + scales.dtype()
              + " of shape "
              + scales.globalShape()
              + ", but the scales of "
              + weight.name()
              + " "
              + shape
              + " are "
              + tiles.dtype()
              + " of shape "
              + scaleShape
              + " (tiles of "
              + tileLabel()
              + ")");
    }
    List<RecordedCopy> out = new ArrayList<>();
    for (RecordedCopy c : layout.copiesOf(weight.name())) {
      out.add(
          new RecordedCopy(
              c.srcName(),
              c.opChain(),
              c.paramName(),
              c.destOffset(),
              c.destShape(),
              c.destStride(),
              DType.F8_E4M3FN));
      out.add(scaleCopy(c, shape, scales.name(), scaleShape));
    }
    return out;
  }

  /** The copy of the scales of what {@code c} copies, into the parameter's scale tensor. */
  private RecordedCopy scaleCopy(RecordedCopy c, Shape source, String scaleName, Shape scaleShape) {
    String param = c.paramName();
    Shape p = quantized.engine().get(param).shape();
    int pr = p.rank();
    long rows = p.dim(pr - 2);
    long cols = p.dim(pr - 1);
    Shape d = c.destShape();
    if (d.dim(d.rank() - 1) != cols || c.destOffset() % cols != 0) {
      throw refused(
          c.srcName(),
          "is copied into part of the rows of '" + param + "'; its scales cannot follow");
    }
    long flatRow = c.destOffset() / cols;
    long matrix = flatRow / rows;
    long r0 = flatRow % rows;
    long n = d.numel() / cols;
    if (r0 + n > rows) {
      throw refused(c.srcName(), "is copied across matrices of '" + param + "'");
    }
    // The member of the parameter those rows belong to, and where its scale rows start.
    long[] members = quantized.members().getOrDefault(param, new long[] {rows});
    long memberStart = 0;
    long scaleRowStart = 0;
    int m = 0;
    while (m < members.length && r0 >= memberStart + members[m]) {
      scaleRowStart += tileCount(members[m], tiles.tileRows());
      memberStart += members[m];
      m++;
    }
    if (m == members.length || r0 + n > memberStart + members[m]) {
      throw refused(c.srcName(), "spans two members of '" + param + "'");
    }
    Shape matrixShape = Shape.of(rows, cols);
    Box destBox;
    Box srcBox;
    try {
      destBox =
          tiles.memberScaleBox(
              matrixShape,
              new Box(new long[] {r0, 0}, new long[] {r0 + n, cols}),
              memberStart,
              members[m]);
      srcBox = tiles.scaleBox(source, sourceBox(c, source));
    } catch (IllegalArgumentException e) {
      throw new LayoutException(
          "quantized source '"
              + c.srcName()
              + "' into '"
              + param
              + "' of inference rank "
              + layout.rank()
              + ": "
              + e.getMessage()
              + " of its scales; this split cannot install the publisher's scales unchanged");
    }
    Shape destScale = destBox.shape();
    if (!destScale.equals(srcBox.shape())) {
      throw refused(
          c.srcName(),
          "needs scales "
              + srcBox
              + " of '"
              + scaleName
              + "' but '"
              + param
              + "' holds "
              + destScale
              + " of them for its rows ["
              + r0
              + ", "
              + (r0 + n)
              + ")");
    }
    Shape scaleParam = quantized.engine().get(quantized.scales().get(param)).shape();
    long scaleRows = scaleParam.dim(pr - 2);
    long scaleCols = scaleParam.dim(pr - 1);
    long destOffset = (matrix * scaleRows + scaleRowStart + destBox.lo(0)) * scaleCols;
    List<OpSpec> chain = new ArrayList<>();
    for (int dim = 0; dim < srcBox.rank(); dim++) {
      if (srcBox.lo(dim) != 0 || srcBox.hi(dim) != scaleShape.dim(dim)) {
        chain.add(OpSpec.narrow(dim, srcBox.lo(dim), srcBox.hi(dim) - srcBox.lo(dim)));
      }
    }
    return RecordedCopy.contiguous(
        scaleName, chain, quantized.scales().get(param), destOffset, destScale, tiles.dtype());
  }

  /** The box of its source {@code c} reads: its narrows applied in order. */
  private static Box sourceBox(RecordedCopy c, Shape source) {
    long[] lo = new long[source.rank()];
    long[] hi = source.dims().clone();
    for (OpSpec op : c.opChain()) {
      if (!op.name().equals("narrow") || op.args().size() != 3) {
        throw new LayoutException(
            "copy of '" + c.srcName() + "' applies " + op + "; scales follow narrows only");
      }
      int dim = ((Number) op.args().get(0)).intValue();
      long start = ((Number) op.args().get(1)).longValue();
      long length = ((Number) op.args().get(2)).longValue();
      lo[dim] += start;
      hi[dim] = lo[dim] + length;
    }
    return new Box(lo, hi);
  }

  private static long tileCount(long n, long tile) {
    long t = tile == ScaleTiles.WHOLE ? Math.max(1, n) : tile;
    return (n + t - 1) / t;
  }

  private String tileLabel() {
    return (tiles.tileRows() == ScaleTiles.WHOLE ? "all" : String.valueOf(tiles.tileRows()))
        + " x "
        + (tiles.tileCols() == ScaleTiles.WHOLE ? "all" : String.valueOf(tiles.tileCols()));
  }

  private LayoutException refused(String tensor, String why) {
    return new LayoutException(
        "quantized source '" + tensor + "' for inference rank " + layout.rank() + ": " + why);
  }
}
