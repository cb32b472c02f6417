package dev.mx.it.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.digest.safetensors.SafetensorsFile;
import dev.mx.digest.safetensors.SafetensorsTensor;
import dev.mx.layout.gen.FloatBits;
import dev.mx.layout.model.ModelArchitecture;
import dev.mx.layout.model.ModelConfigs;
import dev.mx.layout.vllm.InferenceTopology;
import dev.mx.layout.vllm.VllmReference;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * An independent reference for fp8 dumps: each element's source value comes from the generator
 * through {@link VllmReference}, the fp8 codes from a nearest-value search over the format's finite
 * magnitudes (ties to the even code), and the block rule is spelled out here from issues 24 and 34
 * (the factor of each rounding mode), so nothing of the quantizer under test is reused. Which
 * parameters are quantized is decided by their vLLM names, apart from the production rule that
 * reads tensor roles.
 */
final class Fp8DumpReference {
  private static final ValueLayout.OfFloat F32 =
      ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

  /** The linear weights of attention and the MLP, by vLLM name. */
  private static final List<String> LINEAR =
      List.of(
          ".qkv_proj.weight",
          ".o_proj.weight",
          ".gate_up_proj.weight",
          ".down_proj.weight",
          ".w13_weight",
          ".w2_weight");

  private Fp8DumpReference() {}

  /** Finite magnitudes by code of a sign + {@code e} exponent + {@code m} mantissa format. */
  private static float[] magnitudes(int e, int m, int finiteCodes) {
    int bias = (1 << (e - 1)) - 1;
    float[] v = new float[finiteCodes];
    for (int code = 0; code < finiteCodes; code++) {
      int exp = code >>> m;
      int mant = code & ((1 << m) - 1);
      v[code] =
          (float)
              (exp == 0
                  ? mant / (double) (1 << m) * Math.pow(2, 1 - bias)
                  : (1 + mant / (double) (1 << m)) * Math.pow(2, exp - bias));
    }
    return v;
  }

  /** e4m3fn: 0x00..0x7e finite (0x7f is NaN). */
  private static final float[] E4M3 = magnitudes(4, 3, 127);

  /** e5m2: 0x00..0x7b finite (0x7c is infinity). */
  private static final float[] E5M2 = magnitudes(5, 2, 124);

  static int nearestCode(float v, float[] magnitudes) {
    float a = Math.abs(v);
    int best = 0;
    for (int code = 1; code < magnitudes.length; code++) {
      double d = Math.abs((double) magnitudes[code] - a);
      double b = Math.abs((double) magnitudes[best] - a);
      if (d < b || (d == b && (code & 1) == 0)) {
        best = code;
      }
    }
    return best | (v < 0 || (v == 0 && 1 / v < 0) ? 0x80 : 0);
  }

  private static boolean linear(String name) {
    return LINEAR.stream().anyMatch(name::endsWith);
  }

  /** The trainer-dtype value of element {@code i} of {@code param} (0 for padding). */
  private static float source(VllmReference ref, String param, long i, long step, DType trainer) {
    return (float) FloatBits.valueOf(ref.expectedBits(param, i, step, trainer, trainer), trainer);
  }

  /**
   * Every receiver's dump holds each linear weight as e4m3fn under the block rule with its f32
   * {@code _scale_inv}, and every other parameter in the trainer dtype, equal to the generator.
   *
   * @return per receiver rank, the reference's {max abs, max relative} quantization error
   */
  static float[][] assertBlockQuantizedDump(
      Path dump, String model, int tp, int ep, DType trainer, int block, String rounding, long step)
      throws Exception {
    return assertQuantizedDump(dump, "fp8-block", model, tp, ep, trainer, block, rounding, step);
  }

  /**
   * As {@link #assertBlockQuantizedDump} in {@code format}: {@code fp8-block}, {@code
   * fp8-block-ue8m0}, {@code mxfp8}, {@code fp8-tensor} or {@code fp8-channel}, each with the
   * engine's scale tensor (name, dtype, shape) as README states it.
   */
  static float[][] assertQuantizedDump(
      Path dump,
      String format,
      String model,
      int tp,
      int ep,
      DType trainer,
      int block,
      String rounding,
      long step)
      throws Exception {
    String suffix = format.startsWith("fp8-block") ? "_scale_inv" : "_scale";
    ModelArchitecture arch = ModelConfigs.load(model);
    int quantized = 0;
    float[][] errors = new float[tp][2];
    for (int r = 0; r < tp; r++) {
      VllmReference ref = new VllmReference(arch, new InferenceTopology(tp, ep), r);
      try (SafetensorsFile f =
          SafetensorsFile.open(dump.resolve("receiver-" + r + ".safetensors"))) {
        Set<String> names = new LinkedHashSet<>();
        f.tensors().forEach(t -> names.add(t.name()));
        for (SafetensorsTensor t : f.tensors()) {
          String name = t.name();
          if (name.endsWith(suffix)) {
            assertTrue(
                names.contains(name.substring(0, name.length() - suffix.length())),
                "scales of " + name);
            continue;
          }
          assertEquals(ref.shape(name), t.shape(), name);
          if (!linear(name)) {
            assertEquals(trainer, t.dtype(), name + " stays in the trainer dtype");
            assertEquals(
                List.of(), ref.mismatches(name, t.data(), step, trainer, trainer, 3), name);
            continue;
          }
          assertEquals(DType.F8_E4M3FN, t.dtype(), name);
          SafetensorsTensor scales = f.tensor(name + suffix);
          List<String> bad =
              blockMismatches(
                  format,
                  members(arch, tp, name, t.shape()),
                  ref,
                  name,
                  t.shape(),
                  t.data(),
                  scales,
                  step,
                  trainer,
                  block,
                  rounding,
                  errors[r]);
          assertEquals(List.of(), bad, "receiver " + r + " " + name);
          quantized++;
        }
      }
    }
    assertTrue(quantized > 0, "some parameters were quantized");
    return errors;
  }

  /**
   * A dump of {@code fp8-channel} sources installed unchanged under inference {@code tp}: every
   * linear weight's scale is its global row's ({@code amax/448} over every column of the global
   * tensor, not only the rank's: a row-parallel weight's rank holds some columns of each row), its
   * codes {@code e4m3(x * (1 / (amax / 448)))}, vLLM's rounding; everything else the generator's
   * values.
   */
  static void assertPerChannelSourceDump(Path dump, String model, int tp, DType trainer, long step)
      throws Exception {
    ModelArchitecture arch = ModelConfigs.load(model);
    List<VllmReference> refs = new ArrayList<>();
    List<SafetensorsFile> files = new ArrayList<>();
    try {
      for (int r = 0; r < tp; r++) {
        refs.add(new VllmReference(arch, new InferenceTopology(tp, 1), r));
        files.add(SafetensorsFile.open(dump.resolve("receiver-" + r + ".safetensors")));
      }
      int checked = 0;
      for (int r = 0; r < tp; r++) {
        for (SafetensorsTensor t : files.get(r).tensors()) {
          String name = t.name();
          if (name.endsWith("_scale")) {
            continue;
          }
          VllmReference ref = refs.get(r);
          if (!linear(name)) {
            assertEquals(
                List.of(), ref.mismatches(name, t.data(), step, trainer, trainer, 3), name);
            continue;
          }
          assertEquals(DType.F8_E4M3FN, t.dtype(), name);
          SafetensorsTensor scales = files.get(r).tensor(name + "_scale");
          long rows = t.shape().dim(0);
          long cols = t.shape().dim(1);
          assertEquals(Shape.of(rows, 1), scales.shape(), name + "_scale");
          boolean rowParallel = name.contains(".o_proj.") || name.contains(".down_proj.");
          for (long row = 0; row < rows; row++) {
            float amax = 0;
            for (int other = 0; other < tp; other++) {
              if (other != r && !rowParallel) {
                continue; // a column-parallel rank holds whole rows of its own
              }
              for (long c = 0; c < cols; c++) {
                amax =
                    Math.max(
                        amax,
                        Math.abs(source(refs.get(other), name, row * cols + c, step, trainer)));
              }
            }
            amax = Math.max(amax, 1e-4f);
            float scale = amax / 448f;
            float factor = 1f / (amax / 448f);
            assertEquals(
                Float.floatToRawIntBits(scale),
                Float.floatToRawIntBits(scales.data().getAtIndex(F32, row)),
                name + "_scale[" + row + "] of receiver " + r);
            for (long c = 0; c < cols; c++) {
              long k = row * cols + c;
              float x = source(ref, name, k, step, trainer);
              int want = nearestCode(Math.max(-448f, Math.min(448f, x * factor)), E4M3);
              assertEquals(
                  want,
                  t.data().get(ValueLayout.JAVA_BYTE, k) & 0xff,
                  name + "[" + k + "] of receiver " + r);
            }
          }
          checked++;
        }
      }
      assertTrue(checked > 0, "some parameters were quantized");
    } finally {
      for (SafetensorsFile f : files) {
        f.close();
      }
    }
  }

  /**
   * The rows of each member of a fused parameter's matrices, from the model and vLLM's fusing: q,
   * k, v heads in {@code qkv_proj} (a kv head replicated where there are fewer than tp), gate and
   * up halves in {@code gate_up_proj} and {@code w13_weight}; else the whole.
   */
  private static long[] members(ModelArchitecture arch, int tp, String name, Shape shape) {
    long rows = shape.dim(shape.rank() - 2);
    if (name.endsWith(".qkv_proj.weight")) {
      long hd = arch.headDim();
      long kv = Math.max(1, arch.numKeyValueHeads() / tp) * hd;
      return new long[] {arch.numAttentionHeads() / tp * hd, kv, kv};
    }
    if (name.endsWith(".gate_up_proj.weight") || name.endsWith(".w13_weight")) {
      return new long[] {rows / 2, rows / 2};
    }
    return new long[] {rows};
  }

  /** The smallest power of two at or above a positive finite {@code s}, by doubling. */
  private static float pow2AtLeast(float s) {
    float p = Float.MIN_VALUE;
    while (p < s) {
      p *= 2;
    }
    return p;
  }

  /** The largest {@code k} with {@code 2^k <= a} for a positive finite {@code a}, by doubling. */
  private static int floorLog2(float a) {
    int k = -149;
    double p = Math.scalb(1.0, -149);
    while (p * 2 <= a) {
      p *= 2;
      k++;
    }
    return k;
  }

  private static List<String> blockMismatches(
      String format,
      long[] members,
      VllmReference ref,
      String name,
      Shape shape,
      MemorySegment codes,
      SafetensorsTensor scales,
      long step,
      DType trainer,
      int block,
      String rounding,
      float[] error) {
    int rank = shape.rank();
    long rows = shape.dim(rank - 2);
    long cols = shape.dim(rank - 1);
    long matrices = shape.numel() / (rows * cols);
    boolean blocks = format.startsWith("fp8-block");
    boolean mx = format.equals("mxfp8");
    boolean tensor = format.equals("fp8-tensor");
    // Row bands {first row, end row} sharing a scale: block formats cut each member on its own
    // grid, the last band partial; mxfp8 and fp8-channel a band per row; fp8-tensor one band.
    List<long[]> bands = new ArrayList<>();
    long start = 0;
    long bandRows = blocks ? block : tensor ? rows : 1;
    for (long n : blocks ? members : new long[] {rows}) {
      for (long r = start; r < start + n; r += bandRows) {
        bands.add(new long[] {r, Math.min(start + n, r + bandRows)});
      }
      start += n;
    }
    long tileCols = blocks ? block : mx ? 32 : cols;
    long br = bands.size();
    long bc = (cols + tileCols - 1) / tileCols;
    List<String> bad = new ArrayList<>();
    long[] scaleDims = shape.dims().clone();
    scaleDims[rank - 2] = br;
    scaleDims[rank - 1] = bc;
    Shape wantShape =
        tensor
            ? (rank == 2 ? Shape.of(1) : Shape.of(java.util.Arrays.copyOf(shape.dims(), rank - 2)))
            : Shape.of(scaleDims);
    DType wantDtype = mx ? DType.U8 : DType.F32;
    if (!wantShape.equals(scales.shape()) || scales.dtype() != wantDtype) {
      bad.add(name + " scales are " + scales.dtype() + " " + scales.shape());
      return bad;
    }
    for (long m = 0; m < matrices && bad.size() < 3; m++) {
      for (long i = 0; i < br; i++) {
        for (long j = 0; j < bc; j++) {
          float amax = 0;
          for (long row = bands.get((int) i)[0]; row < bands.get((int) i)[1]; row++) {
            for (long c = j * tileCols; c < Math.min(cols, (j + 1) * tileCols); c++) {
              amax =
                  Math.max(
                      amax,
                      Math.abs(source(ref, name, (m * rows + row) * cols + c, step, trainer)));
            }
          }
          float scaleInv;
          float factor;
          long scaleIndex = (m * br + i) * bc + j;
          float have;
          if (mx) {
            // OCP MX: e = floor(log2(amax)) - 8 clamped to [-127, 127], the byte e + 127.
            int e = amax == 0 ? -127 : Math.max(-127, Math.min(127, floorLog2(amax) - 8));
            scaleInv = (float) Math.scalb(1.0, e);
            factor = (float) Math.scalb(1.0, -e);
            int got = scales.data().get(ValueLayout.JAVA_BYTE, scaleIndex) & 0xff;
            have = got == e + 127 ? scaleInv : Float.NaN;
          } else {
            amax = Math.max(amax, 1e-4f);
            if (format.equals("fp8-block-ue8m0")) {
              scaleInv = pow2AtLeast(amax / 448f);
              factor = 1f / scaleInv;
            } else {
              scaleInv = amax / 448f;
              // The modes' factors as README states them, each operation rounded to f32.
              factor =
                  switch (rounding) {
                    case "exact" -> 448f / amax;
                    case "vllm" -> 1f / (amax / 448f);
                    case "deepgemm" -> (1f / amax) * 448f;
                    default -> throw new IllegalArgumentException("rounding " + rounding);
                  };
            }
            have = scales.data().getAtIndex(F32, scaleIndex);
          }
          if (Float.floatToRawIntBits(have) != Float.floatToRawIntBits(scaleInv)) {
            bad.add(
                name
                    + "_scale_inv["
                    + m
                    + ","
                    + i
                    + ","
                    + j
                    + "] = "
                    + have
                    + ", expected "
                    + scaleInv);
          }
          for (long row = bands.get((int) i)[0]; row < bands.get((int) i)[1]; row++) {
            for (long c = j * tileCols; c < Math.min(cols, (j + 1) * tileCols); c++) {
              long k = (m * rows + row) * cols + c;
              float x = source(ref, name, k, step, trainer);
              int want = nearestCode(Math.max(-448f, Math.min(448f, x * factor)), E4M3);
              float dequantized = E4M3[want & 0x7f] * ((want & 0x80) != 0 ? -1 : 1) * scaleInv;
              float err = Math.abs(dequantized - x);
              error[0] = Math.max(error[0], err);
              if (x != 0) {
                error[1] = Math.max(error[1], err / Math.abs(x));
              }
              int got = codes.get(ValueLayout.JAVA_BYTE, k) & 0xff;
              if (got != want && bad.size() < 3) {
                bad.add(
                    name
                        + "["
                        + k
                        + "] = 0x"
                        + Integer.toHexString(got)
                        + ", expected 0x"
                        + Integer.toHexString(want));
              }
            }
          }
        }
      }
    }
    return bad;
  }

  /** Every dumped parameter is the generator's trainer-dtype value cast element-wise to fp8. */
  static void assertElementCastDump(
      Path dump, String model, int tp, int ep, DType trainer, DType fp8, long step)
      throws Exception {
    float[] table = fp8 == DType.F8_E4M3FN ? E4M3 : E5M2;
    ModelArchitecture arch = ModelConfigs.load(model);
    for (int r = 0; r < tp; r++) {
      VllmReference ref = new VllmReference(arch, new InferenceTopology(tp, ep), r);
      try (SafetensorsFile f =
          SafetensorsFile.open(dump.resolve("receiver-" + r + ".safetensors"))) {
        for (SafetensorsTensor t : f.tensors()) {
          assertEquals(fp8, t.dtype(), t.name());
          long n = t.shape().numel();
          for (long k = 0; k < n; k++) {
            int want = nearestCode(source(ref, t.name(), k, step, trainer), table);
            int got = t.data().get(ValueLayout.JAVA_BYTE, k) & 0xff;
            if (got != want) {
              assertEquals(
                  Integer.toHexString(want),
                  Integer.toHexString(got),
                  "receiver " + r + " " + t.name() + "[" + k + "]");
            }
          }
        }
      }
    }
  }
}
