package dev.mx.cuda;

import dev.mx.api.DType;
import dev.mx.api.annotation.Stable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Dtype casts and the strided re-slice copy on the device ({@code mx_copy.cu}), bit-identical with
 * mx-refit's CPU casts and view copies: f32, bf16, f16, f8_e4m3fn and f8_e5m2 in any pair (round to
 * nearest even, NaN and overflow as PyTorch's CPU {@code copy_}), or a plain element copy when the
 * types are equal.
 *
 * <p>Views are given as in {@code torch.as_strided}: a shape and strides in elements from the
 * address of element 0. Size-1 dims are dropped and dims merged where both layouts allow; up to
 * four dims go to one launch, more are split into launches over the outermost ones.
 */
@Stable
public final class CudaCasts {
  private static final int THREADS = 256;
  private static final int KERNEL_DIMS = 4;

  private CudaCasts() {}

  /** Whether the device converts {@code from} to {@code to} (or copies, when equal). */
  public static boolean supports(DType from, DType to) {
    return code(from) >= 0 && code(to) >= 0;
  }

  /**
   * The type code of {@code mx_float.cuh} ({@code MX_F32} ...), or -1 when the device does not
   * convert it.
   */
  static int code(DType t) {
    return switch (t) {
      case F32 -> 0;
      case BF16 -> 1;
      case F16 -> 2;
      case F8_E4M3FN -> 3;
      case F8_E5M2 -> 4;
      default -> -1;
    };
  }

  /**
   * Converts {@code count} elements of type {@code from} at device address {@code src} (consecutive
   * elements {@code srcStride} bytes apart) into type {@code to} at {@code dst} ({@code dstStride}
   * bytes apart), on device {@code ordinal}, and waits.
   */
  public static void convert(
      int ordinal,
      long src,
      long srcStride,
      DType from,
      long dst,
      long dstStride,
      DType to,
      long count) {
    check(from, to, "convert");
    if (count <= 0) {
      return;
    }
    CudaDevice device = CudaDevice.get(ordinal);
    launch(
        device,
        src,
        dst,
        from,
        to,
        count,
        srcStride,
        dstStride,
        new long[] {1, 1, 1},
        new long[3],
        new long[3]);
    device.synchronize();
  }

  /**
   * {@code dst[dstStrides] = src[srcStrides]} over {@code shape} (strides in elements of each
   * side's type), converting {@code from} to {@code to}, on device {@code ordinal}; waits. The
   * caller has checked that both views lie inside their allocations (as mx-refit's re-slice checks
   * against the plan).
   */
  public static void viewCopy(
      int ordinal,
      long src,
      DType from,
      long[] srcStrides,
      long dst,
      DType to,
      long[] dstStrides,
      long[] shape) {
    check(from, to, "view copy");
    if (shape.length != srcStrides.length || shape.length != dstStrides.length) {
      throw new IllegalArgumentException(
          "view copy: shape "
              + Arrays.toString(shape)
              + ", source strides "
              + Arrays.toString(srcStrides)
              + " and destination strides "
              + Arrays.toString(dstStrides)
              + " differ in rank");
    }
    // {extent, srcStrideBytes, dstStrideBytes}, outermost first, size-1 dims dropped, mergeable
    // dims merged.
    List<long[]> dims = new ArrayList<>();
    for (int d = 0; d < shape.length; d++) {
      if (shape[d] < 0) {
        throw new IllegalArgumentException(
            "view copy: negative extent in shape " + Arrays.toString(shape));
      }
      if (shape[d] == 0) {
        return;
      }
      if (shape[d] == 1) {
        continue;
      }
      long[] dim = {shape[d], srcStrides[d] * from.elementSize(), dstStrides[d] * to.elementSize()};
      if (!dims.isEmpty()) {
        long[] outer = dims.getLast();
        if (outer[1] == dim[0] * dim[1] && outer[2] == dim[0] * dim[2]) {
          dims.set(dims.size() - 1, new long[] {outer[0] * dim[0], dim[1], dim[2]});
          continue;
        }
      }
      dims.add(dim);
    }
    if (dims.isEmpty()) {
      dims.add(new long[] {1, from.elementSize(), to.elementSize()});
    }
    CudaDevice device = CudaDevice.get(ordinal);
    launchDims(device, src, dst, from, to, dims);
    device.synchronize();
  }

  /**
   * FP8 block quantization on device {@code ordinal} (dev.mx.refit.cast.BlockQuantizer's rule, bit
   * for bit): the contiguous row-major {@code from} tensor of {@code shape} at {@code src} (bf16,
   * f16 or f32) into e4m3fn codes at {@code dst} and f32 {@code scale_inv} at {@code scales},
   * {@code [..., ceil(rows/block), ceil(cols/block)]}; waits.
   */
  public static void quantizeFp8Block(
      int ordinal, long src, DType from, long dst, long scales, long[] shape, int block) {
    if (from != DType.BF16 && from != DType.F16 && from != DType.F32) {
      throw new IllegalArgumentException(
          "fp8 block quantization reads bf16, f16 or f32, not " + from);
    }
    if (shape.length < 2 || block <= 0) {
      throw new IllegalArgumentException(
          "fp8 block quantization needs a matrix (or a stack of them) and a positive block, got shape "
              + Arrays.toString(shape)
              + " and block "
              + block);
    }
    long rows = shape[shape.length - 2];
    long cols = shape[shape.length - 1];
    long matrices = 1;
    for (int d = 0; d < shape.length - 2; d++) {
      matrices *= shape[d];
    }
    long tiles = matrices * ((rows + block - 1) / block) * ((cols + block - 1) / block);
    if (tiles == 0) {
      return;
    }
    CudaDevice device = CudaDevice.get(ordinal);
    int threads = 256;
    int blocks = (int) Math.min(tiles, device.fullGrid(CudaKernels.FP8_BLOCK_QUANTIZE, threads));
    device.launch(
        CudaKernels.FP8_BLOCK_QUANTIZE,
        Math.max(1, blocks),
        threads,
        src,
        code(from),
        dst,
        scales,
        matrices,
        rows,
        cols,
        block);
    device.synchronize();
  }

  private static void launchDims(
      CudaDevice device, long src, long dst, DType from, DType to, List<long[]> dims) {
    if (dims.size() > KERNEL_DIMS) {
      long[] outer = dims.getFirst();
      List<long[]> rest = dims.subList(1, dims.size());
      for (long i = 0; i < outer[0]; i++) {
        launchDims(device, src + i * outer[1], dst + i * outer[2], from, to, rest);
      }
      return;
    }
    long[] inner = dims.getLast();
    long[] n = {1, 1, 1};
    long[] s = new long[3];
    long[] d = new long[3];
    int outerDims = dims.size() - 1;
    for (int i = 0; i < outerDims; i++) {
      int slot = 3 - outerDims + i; // n2 is the innermost outer dim
      n[slot] = dims.get(i)[0];
      s[slot] = dims.get(i)[1];
      d[slot] = dims.get(i)[2];
    }
    launch(device, src, dst, from, to, inner[0], inner[1], inner[2], n, s, d);
  }

  private static void launch(
      CudaDevice device,
      long src,
      long dst,
      DType from,
      DType to,
      long inner,
      long srcInner,
      long dstInner,
      long[] n,
      long[] s,
      long[] d) {
    long total = inner * n[0] * n[1] * n[2];
    int blocks =
        (int)
            Math.min(
                (total + THREADS - 1) / THREADS, device.fullGrid(CudaKernels.VIEW_COPY, THREADS));
    device.launch(
        CudaKernels.VIEW_COPY,
        Math.max(1, blocks),
        THREADS,
        src,
        dst,
        code(from),
        code(to),
        inner,
        srcInner,
        dstInner,
        n[0],
        n[1],
        n[2],
        s[0],
        s[1],
        s[2],
        d[0],
        d[1],
        d[2]);
  }

  private static void check(DType from, DType to, String what) {
    if (!supports(from, to)) {
      throw new IllegalArgumentException(
          "device "
              + what
              + " from "
              + from
              + " to "
              + to
              + " is not supported (the device converts between f32, bf16, f16, f8_e4m3fn and f8_e5m2)");
    }
  }
}
