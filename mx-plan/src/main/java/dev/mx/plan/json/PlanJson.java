package dev.mx.plan.json;

import com.fasterxml.jackson.databind.JsonNode;
import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.plan.BoundingDecision;
import dev.mx.api.plan.BoundingMode;
import dev.mx.api.plan.CaptureResult;
import dev.mx.api.plan.ConvertSource;
import dev.mx.api.plan.FullPullSource;
import dev.mx.api.plan.OpSpec;
import dev.mx.api.plan.PullSegment;
import dev.mx.api.plan.RecordedCopy;
import dev.mx.api.plan.Shard;
import dev.mx.api.plan.SourceInfo;
import dev.mx.api.plan.StagedShard;
import dev.mx.api.plan.TransferPlan;
import dev.mx.api.refit.ParamSpec;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The JSON form of {@code mx plan} (ARCHITECTURE §5.3): reads a planning request and writes a plan,
 * with snake_case names. Every input error names its JSON path (e.g. {@code
 * sources.w.shards[1].offset}).
 */
public final class PlanJson {
  private PlanJson() {}

  /**
   * A decoded request.
   *
   * @param maxSegmentsPerCopy the file's threshold, or null to use the environment's
   * @param bounding the file's {@code "bounding"} mode, or null when absent
   * @param params the receiver's parameter layout ({@code "params"}), empty when absent: the
   *     planner does not need it, a harness that allocates the receive buffers does
   */
  public record PlanRequest(
      Integer maxSegmentsPerCopy,
      Map<String, SourceInfo> sources,
      CaptureResult capture,
      BoundingMode bounding,
      Map<String, ParamSpec> params) {}

  private static final Set<String> ROOT_KEYS =
      Set.of("max_segments_per_copy", "sources", "copies", "unsupported", "bounding", "params");
  private static final Set<String> PARAM_KEYS = Set.of("shape", "dtype");
  private static final Set<String> SOURCE_KEYS =
      Set.of("dtype", "global_shape", "elsize", "shards", "partial");
  private static final Set<String> SHARD_KEYS =
      Set.of("session", "addr", "offset", "shape", "digest");
  private static final Set<String> COPY_KEYS =
      Set.of("src", "op_chain", "param", "dest_offset", "dest_shape", "dest_stride", "dest_dtype");

  /** Decodes a request; throws {@link IllegalArgumentException} naming the JSON path at fault. */
  public static PlanRequest read(JsonNode root) {
    requireObject(root, "$", ROOT_KEYS);
    Integer max = null;
    JsonNode m = root.get("max_segments_per_copy");
    if (m != null && !m.isNull()) {
      long v = integer(m, "max_segments_per_copy");
      if (v < 1 || v > Integer.MAX_VALUE) {
        throw new IllegalArgumentException(
            "max_segments_per_copy: " + v + " must be between 1 and " + Integer.MAX_VALUE);
      }
      max = (int) v;
    }
    BoundingMode bounding = null;
    JsonNode b = root.get("bounding");
    if (b != null && !b.isNull()) {
      try {
        bounding = BoundingMode.parse(text(b, "bounding"));
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(
            e.getMessage().startsWith("bounding:") ? e.getMessage() : "bounding: " + e.getMessage(),
            e);
      }
    }
    Map<String, SourceInfo> sources = new LinkedHashMap<>();
    JsonNode srcs = required(root, "sources", "$");
    requireObject(srcs, "sources", null);
    for (Iterator<Map.Entry<String, JsonNode>> it = srcs.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      sources.put(e.getKey(), source(e.getValue(), "sources." + e.getKey()));
    }
    List<RecordedCopy> copies = new ArrayList<>();
    JsonNode cs = root.get("copies");
    if (cs != null && !cs.isNull()) {
      requireArray(cs, "copies");
      for (int i = 0; i < cs.size(); i++) {
        copies.add(copy(cs.get(i), "copies[" + i + "]"));
      }
    }
    List<String> unsupported = new ArrayList<>();
    Map<String, String> reasons = new LinkedHashMap<>();
    JsonNode un = root.get("unsupported");
    if (un != null && !un.isNull()) {
      requireObject(un, "unsupported", null);
      for (Iterator<Map.Entry<String, JsonNode>> it = un.fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> e = it.next();
        unsupported.add(e.getKey());
        reasons.put(e.getKey(), text(e.getValue(), "unsupported." + e.getKey()));
      }
    }
    Map<String, ParamSpec> params = new LinkedHashMap<>();
    JsonNode ps = root.get("params");
    if (ps != null && !ps.isNull()) {
      requireObject(ps, "params", null);
      for (Iterator<Map.Entry<String, JsonNode>> it = ps.fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> e = it.next();
        String path = "params." + e.getKey();
        requireObject(e.getValue(), path, PARAM_KEYS);
        params.put(
            e.getKey(),
            new ParamSpec(
                shape(required(e.getValue(), "shape", path), path + ".shape"),
                dtype(required(e.getValue(), "dtype", path), path + ".dtype")));
      }
    }
    return new PlanRequest(
        max, sources, new CaptureResult(copies, unsupported, 0, reasons), bounding, params);
  }

  /**
   * The request {@link #read} takes back: {@code sources} with their shards (and digests where
   * published), the capture's copies and unsupported sources, and, when {@code params} is not
   * empty, the receiver's parameter layout. A harness outside mx (ModelExpress's receiver, say)
   * plans and allocates from it exactly what mx does.
   */
  public static Map<String, Object> writeRequest(
      Map<String, SourceInfo> sources, CaptureResult capture, Map<String, ParamSpec> params) {
    Map<String, Object> m = new LinkedHashMap<>();
    Map<String, Object> srcs = new LinkedHashMap<>();
    sources.forEach(
        (name, info) -> {
          Map<String, Object> o = new LinkedHashMap<>();
          o.put("dtype", info.dtype().torchLabel());
          o.put("global_shape", info.globalShape().dims());
          if (info.partial()) {
            o.put("partial", true);
          }
          List<Object> shards = new ArrayList<>(info.shards().size());
          for (Shard s : info.shards()) {
            Map<String, Object> so = new LinkedHashMap<>();
            so.put("session", s.session());
            so.put("addr", s.addr());
            so.put("offset", s.shardOffset());
            so.put("shape", s.shape().dims());
            if (s.digest() != null) {
              so.put("digest", s.digest());
            }
            shards.add(so);
          }
          o.put("shards", shards);
          srcs.put(name, o);
        });
    m.put("sources", srcs);
    List<Object> copies = new ArrayList<>(capture.copies().size());
    capture.copies().forEach(c -> copies.add(copy(c)));
    m.put("copies", copies);
    if (!capture.unsupported().isEmpty()) {
      Map<String, Object> un = new LinkedHashMap<>();
      for (String name : capture.unsupported()) {
        un.put(name, capture.unsupportedReasons().getOrDefault(name, "unsupported at capture"));
      }
      m.put("unsupported", un);
    }
    if (!params.isEmpty()) {
      Map<String, Object> ps = new LinkedHashMap<>();
      params.forEach(
          (name, spec) ->
              ps.put(
                  name, Map.of("shape", spec.shape().dims(), "dtype", spec.dtype().torchLabel())));
      m.put("params", ps);
    }
    return m;
  }

  private static SourceInfo source(JsonNode n, String path) {
    requireObject(n, path, SOURCE_KEYS);
    DType dtype = dtype(required(n, "dtype", path), path + ".dtype");
    Shape global = shape(required(n, "global_shape", path), path + ".global_shape");
    int elsize = dtype.elementSize();
    JsonNode es = n.get("elsize");
    if (es != null && !es.isNull() && integer(es, path + ".elsize") != elsize) {
      throw new IllegalArgumentException(
          path
              + ".elsize: "
              + es
              + " contradicts dtype "
              + dtype.torchLabel()
              + " ("
              + elsize
              + " bytes)");
    }
    JsonNode ss = required(n, "shards", path);
    requireArray(ss, path + ".shards");
    List<Shard> shards = new ArrayList<>(ss.size());
    for (int i = 0; i < ss.size(); i++) {
      String sp = path + ".shards[" + i + "]";
      JsonNode s = ss.get(i);
      requireObject(s, sp, SHARD_KEYS);
      String session = text(required(s, "session", sp), sp + ".session");
      long addr = integer(required(s, "addr", sp), sp + ".addr");
      long[] offset = longs(required(s, "offset", sp), sp + ".offset");
      Shape shape = shape(required(s, "shape", sp), sp + ".shape");
      JsonNode d = s.get("digest");
      String digest = d == null || d.isNull() ? null : text(d, sp + ".digest");
      try {
        shards.add(new Shard(offset, shape, session, addr, elsize, digest));
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(sp + ": " + e.getMessage(), e);
      }
    }
    boolean partial = false;
    JsonNode p = n.get("partial");
    if (p != null && !p.isNull()) {
      if (!p.isBoolean()) {
        throw new IllegalArgumentException(path + ".partial: expected true or false, got " + p);
      }
      partial = p.booleanValue();
    }
    return new SourceInfo(global, dtype, elsize, shards, partial);
  }

  private static RecordedCopy copy(JsonNode n, String path) {
    requireObject(n, path, COPY_KEYS);
    String src = text(required(n, "src", path), path + ".src");
    List<OpSpec> chain = new ArrayList<>();
    JsonNode ops = n.get("op_chain");
    if (ops != null && !ops.isNull()) {
      requireArray(ops, path + ".op_chain");
      for (int i = 0; i < ops.size(); i++) {
        chain.add(op(ops.get(i), path + ".op_chain[" + i + "]"));
      }
    }
    String param = text(required(n, "param", path), path + ".param");
    long offset = integer(required(n, "dest_offset", path), path + ".dest_offset");
    Shape shape = shape(required(n, "dest_shape", path), path + ".dest_shape");
    JsonNode st = n.get("dest_stride");
    long[] stride =
        st == null || st.isNull() ? rowMajorStrides(shape, path) : longs(st, path + ".dest_stride");
    DType dtype = dtype(required(n, "dest_dtype", path), path + ".dest_dtype");
    try {
      return new RecordedCopy(src, chain, param, offset, shape, stride, dtype);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(path + ": " + e.getMessage(), e);
    }
  }

  /**
   * The default {@code dest_stride}; PlanInputCheck bounds the byte counts, but the strides of a
   * huge (even empty) shape can overflow before it runs.
   */
  private static long[] rowMajorStrides(Shape shape, String path) {
    try {
      return shape.rowMajorStrides();
    } catch (ArithmeticException e) {
      throw new IllegalArgumentException(
          path + ".dest_shape: the row-major strides of " + shape + " exceed 2^63-1", e);
    }
  }

  /**
   * {@code [name, [args...]]} or {@code [name, [args...], {kwargs}]}; a bare {@code [name]} has no
   * arguments.
   */
  private static OpSpec op(JsonNode n, String path) {
    if (!n.isArray() || n.isEmpty() || n.size() > 3 || !n.get(0).isTextual()) {
      throw new IllegalArgumentException(
          path + ": an op must be [name, [args...]] or [name, [args...], {kwargs}], got " + n);
    }
    List<Object> args = new ArrayList<>();
    if (n.size() > 1 && !n.get(1).isNull()) {
      requireArray(n.get(1), path + "[1]");
      for (JsonNode a : n.get(1)) {
        args.add(value(a));
      }
    }
    Map<String, Object> kwargs = new LinkedHashMap<>();
    if (n.size() > 2 && !n.get(2).isNull()) {
      requireObject(n.get(2), path + "[2]", null);
      n.get(2).fields().forEachRemaining(e -> kwargs.put(e.getKey(), value(e.getValue())));
    }
    return new OpSpec(n.get(0).asText(), args, kwargs);
  }

  /**
   * JSON values as op arguments: integers become {@code Long}, arrays {@code List}, null stays
   * null.
   */
  private static Object value(JsonNode n) {
    if (n.isNull()) {
      return null;
    }
    if (n.isIntegralNumber() && n.canConvertToLong()) {
      return n.longValue();
    }
    if (n.isNumber()) {
      return n.doubleValue();
    }
    if (n.isBoolean()) {
      return n.booleanValue();
    }
    if (n.isArray()) {
      List<Object> l = new ArrayList<>(n.size());
      n.forEach(x -> l.add(value(x)));
      return l;
    }
    return n.asText();
  }

  private static DType dtype(JsonNode n, String path) {
    try {
      return DType.parse(text(n, path));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(path + ": " + e.getMessage(), e);
    }
  }

  private static Shape shape(JsonNode n, String path) {
    long[] dims = longs(n, path);
    for (int d = 0; d < dims.length; d++) {
      if (dims[d] < 0) {
        throw new IllegalArgumentException(
            path + ": extent " + dims[d] + " of dim " + d + " is negative");
      }
    }
    return new Shape(dims);
  }

  private static long[] longs(JsonNode n, String path) {
    requireArray(n, path);
    long[] out = new long[n.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = integer(n.get(i), path + "[" + i + "]");
    }
    return out;
  }

  private static long integer(JsonNode n, String path) {
    if (!n.isIntegralNumber() || !n.canConvertToLong()) {
      throw new IllegalArgumentException(path + ": expected an integer, got " + n);
    }
    return n.longValue();
  }

  private static String text(JsonNode n, String path) {
    if (!n.isTextual()) {
      throw new IllegalArgumentException(path + ": expected a string, got " + n);
    }
    return n.asText();
  }

  private static JsonNode required(JsonNode n, String key, String path) {
    JsonNode v = n.get(key);
    if (v == null || v.isNull()) {
      throw new IllegalArgumentException((path.equals("$") ? "" : path + ".") + key + ": missing");
    }
    return v;
  }

  private static void requireArray(JsonNode n, String path) {
    if (!n.isArray()) {
      throw new IllegalArgumentException(
          path + ": expected an array, got " + n.getNodeType().name().toLowerCase(Locale.ROOT));
    }
  }

  private static void requireObject(JsonNode n, String path, Set<String> allowed) {
    if (n == null || !n.isObject()) {
      throw new IllegalArgumentException(path + ": expected an object");
    }
    if (allowed != null) {
      for (Iterator<String> it = n.fieldNames(); it.hasNext(); ) {
        String k = it.next();
        if (!allowed.contains(k)) {
          throw new IllegalArgumentException(
              (path.equals("$") ? "" : path + ".")
                  + k
                  + ": unknown key; expected one of "
                  + new java.util.TreeSet<>(allowed));
        }
      }
    }
  }

  /** The plan as ARCHITECTURE §5.3 prints it, in the planner's order. */
  public static Map<String, Object> write(TransferPlan plan) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("segments", segments(plan.segments()));
    List<Object> full = new ArrayList<>();
    for (FullPullSource f : plan.fullPulls()) {
      Map<String, Object> o = new LinkedHashMap<>();
      o.put("src", f.srcName());
      o.put("global_shape", f.globalShape().dims());
      o.put("dtype", f.dtype().torchLabel());
      o.put("elsize", f.elsize());
      o.put("segments", segments(f.segments()));
      List<Object> copies = new ArrayList<>();
      f.copies().forEach(c -> copies.add(copy(c)));
      o.put("copies", copies);
      full.add(o);
    }
    m.put("full_pulls", full);
    List<Object> converts = new ArrayList<>();
    for (ConvertSource c : plan.converts()) {
      Map<String, Object> o = new LinkedHashMap<>();
      o.put("param", c.paramName());
      o.put("dest_shape", c.destShape().dims());
      o.put("src_dtype", c.srcDtype().torchLabel());
      o.put("segments", segments(c.segments()));
      converts.add(o);
    }
    m.put("converts", converts);
    m.put("fallback", plan.fallback());
    m.put("fallback_reasons", plan.fallbackReasons());
    m.put("unbounded_sources", plan.unboundedSources());
    m.put("exact_descriptor_count", plan.exactDescriptorCount());
    m.put("exact_bytes", plan.exactBytes());
    m.put("descriptor_count", plan.descriptorCount());
    m.put("bytes_planned", plan.bytesPlanned());
    m.put("descriptor_savings", plan.descriptorSavings());
    m.put("extra_wire_bytes", plan.extraWireBytes());
    if (plan.bounding() == BoundingMode.SHARD) {
      writeShardBounding(plan, m);
    }
    return m;
  }

  /** The keys only a shard-bounded plan has, after the ModelExpress ones. */
  private static void writeShardBounding(TransferPlan plan, Map<String, Object> m) {
    m.put("bounding", plan.bounding().label());
    List<Object> staged = new ArrayList<>();
    for (StagedShard st : plan.stagedShards()) {
      Map<String, Object> o = new LinkedHashMap<>();
      o.put("src", st.srcName());
      o.put("shard_index", st.shardIndex());
      o.put("session", st.shard().session());
      o.put("offset", st.shard().shardOffset());
      o.put("shape", st.shard().shape().dims());
      o.put("dtype", st.dtype().torchLabel());
      o.put("elsize", st.shard().elsize());
      o.put("segment", segments(List.of(st.segment())).get(0));
      List<Object> copies = new ArrayList<>();
      st.copies().forEach(c -> copies.add(copy(c)));
      o.put("copies", copies);
      staged.add(o);
    }
    m.put("staged_shards", staged);
    Map<String, Integer> counts = new LinkedHashMap<>();
    for (BoundingDecision.Option o : BoundingDecision.Option.values()) {
      counts.put(o.label(), 0);
    }
    List<Object> decisions = new ArrayList<>();
    for (BoundingDecision d : plan.boundingDecisions()) {
      counts.merge(d.chosen().label(), 1, Integer::sum);
      Map<String, Object> o = new LinkedHashMap<>();
      o.put("src", d.source());
      o.put("chosen", d.chosen().label());
      o.put("reason", d.reason());
      List<Object> options = new ArrayList<>();
      for (BoundingDecision.OptionCost c : d.options()) {
        Map<String, Object> oc = new LinkedHashMap<>();
        oc.put("option", c.option().label());
        oc.put("descriptors", c.descriptors());
        oc.put("wire_bytes", c.wireBytes());
        oc.put("reslice_bytes", c.resliceBytes());
        oc.put("seconds", c.seconds());
        oc.put("rejected", c.rejected());
        options.add(oc);
      }
      o.put("options", options);
      decisions.add(o);
    }
    m.put("bounding_counts", counts);
    m.put("bounding_decisions", decisions);
  }

  private static List<Object> segments(List<PullSegment> segs) {
    List<Object> out = new ArrayList<>(segs.size());
    for (PullSegment s : segs) {
      Map<String, Object> o = new LinkedHashMap<>();
      o.put("session", s.session());
      o.put("src_addr", s.srcAddr());
      o.put("param", s.paramName());
      o.put("dst_byte", s.dstByte());
      o.put("nbytes", s.nbytes());
      out.add(o);
    }
    return out;
  }

  private static Map<String, Object> copy(RecordedCopy c) {
    Map<String, Object> o = new LinkedHashMap<>();
    o.put("src", c.srcName());
    List<Object> chain = new ArrayList<>();
    for (OpSpec op : c.opChain()) {
      List<Object> e = new ArrayList<>(Arrays.asList(op.name(), op.args()));
      if (!op.kwargs().isEmpty()) {
        e.add(op.kwargs());
      }
      chain.add(e);
    }
    o.put("op_chain", chain);
    o.put("param", c.paramName());
    o.put("dest_offset", c.destOffset());
    o.put("dest_shape", c.destShape().dims());
    o.put("dest_stride", c.destStride());
    o.put("dest_dtype", c.destDtype().torchLabel());
    return o;
  }
}
