package dev.mx.refit.embed;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.annotation.Stable;
import dev.mx.api.plan.CaptureResult;
import dev.mx.api.plan.RecordedCopy;
import dev.mx.api.refit.Capture;
import dev.mx.api.refit.GeometrySource;
import dev.mx.api.refit.ManifestEntry;
import dev.mx.api.refit.ParamSpec;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A receiver's geometry declared parameter by parameter instead of captured from an engine's
 * loader: each parameter is a TP shard of one source tensor, or several shards fused along
 * dimension 0 (vLLM's {@code qkv_proj} and {@code gate_up_proj}). A source the publishers do not
 * offer is reported as unsupported, naming it, at capture time.
 */
@Stable
public final class TargetGeometry implements GeometrySource {

  private final Map<String, ParamSpec> params;
  private final List<RecordedCopy> copies;

  private TargetGeometry(Map<String, ParamSpec> params, List<RecordedCopy> copies) {
    this.params = params;
    this.copies = copies;
  }

  /** A new, empty declaration. */
  public static Builder builder() {
    return new Builder();
  }

  /** The declared parameters, in declaration order. */
  public Map<String, ParamSpec> params() {
    return params;
  }

  @Override
  public Capture capture(List<ManifestEntry> manifest) {
    Map<String, ManifestEntry> offered = new LinkedHashMap<>();
    for (ManifestEntry e : manifest) {
      offered.put(e.name(), e);
    }
    List<RecordedCopy> kept = new ArrayList<>();
    List<String> unsupported = new ArrayList<>();
    Map<String, String> reasons = new LinkedHashMap<>();
    for (RecordedCopy c : copies) {
      if (!manifest.isEmpty() && !offered.containsKey(c.srcName())) {
        if (!unsupported.contains(c.srcName())) {
          unsupported.add(c.srcName());
          reasons.put(
              c.srcName(),
              "no publisher offers '" + c.srcName() + "' (needed by '" + c.paramName() + "')");
        }
      } else {
        kept.add(c);
      }
    }
    return new Capture(new CaptureResult(kept, unsupported, 0, reasons), params);
  }

  /** Declares parameters; {@link #build()} freezes them. */
  public static final class Builder {
    private final Map<String, ParamSpec> params = new LinkedHashMap<>();
    private final List<RecordedCopy> copies = new ArrayList<>();

    private Builder() {}

    /** Parameter {@code param} holds {@code shard} of source {@code source}, as {@code dtype}. */
    public Builder shard(String param, String source, TpShard shard, DType dtype) {
      declare(param, shard.shape(), dtype);
      copies.add(
          RecordedCopy.contiguous(source, List.of(shard.narrow()), param, 0, shard.shape(), dtype));
      return this;
    }

    /**
     * Parameter {@code param} holds all of {@code source} (a replicated tensor such as a norm
     * weight).
     */
    public Builder whole(String param, String source, Shape shape, DType dtype) {
      return shard(param, source, TpShard.whole(shape), dtype);
    }

    /**
     * Parameter {@code param} is the concatenation along dimension 0 of the given parts, in order:
     * e.g. {@code qkv_proj} = q shard, k shard, v shard. Every part must have the same trailing
     * dimensions.
     */
    public Builder fused(String param, DType dtype, Part... parts) {
      if (parts.length == 0) {
        throw new IllegalArgumentException("fused parameter '" + param + "' has no parts");
      }
      long rows = 0;
      Shape first = parts[0].shard().shape();
      for (Part p : parts) {
        Shape s = p.shard().shape();
        if (s.rank() != first.rank() || !trailing(s).equals(trailing(first))) {
          throw new IllegalArgumentException(
              "fused parameter '"
                  + param
                  + "': part '"
                  + p.source()
                  + "' "
                  + s
                  + " does not match the trailing dimensions of "
                  + first);
        }
        rows += s.dim(0);
      }
      long[] dims = first.dims();
      dims[0] = rows;
      declare(param, new Shape(dims), dtype);
      long offset = 0;
      for (Part p : parts) {
        Shape s = p.shard().shape();
        copies.add(
            RecordedCopy.contiguous(
                p.source(), List.of(p.shard().narrow()), param, offset, s, dtype));
        offset += s.numel();
      }
      return this;
    }

    /** Freezes the declaration. */
    public TargetGeometry build() {
      return new TargetGeometry(
          java.util.Collections.unmodifiableMap(new LinkedHashMap<>(params)), List.copyOf(copies));
    }

    private void declare(String param, Shape shape, DType dtype) {
      if (params.putIfAbsent(param, new ParamSpec(shape, dtype)) != null) {
        throw new IllegalArgumentException("parameter '" + param + "' is declared twice");
      }
    }

    private static List<Long> trailing(Shape s) {
      List<Long> out = new ArrayList<>();
      for (int d = 1; d < s.rank(); d++) {
        out.add(s.dim(d));
      }
      return out;
    }
  }

  /**
   * One part of a fused parameter: a shard of a source tensor.
   *
   * @param source the global (e.g. Hugging Face) tensor name
   * @param shard which shard of it
   */
  public record Part(String source, TpShard shard) {

    /** Shorthand for {@code new Part(source, shard)}. */
    public static Part of(String source, TpShard shard) {
      return new Part(source, shard);
    }
  }
}
