package dev.mx.cuda;

import dev.mx.api.annotation.Internal;
import java.util.List;

/**
 * The kernels of {@code src/main/cuda} as the Java launch code calls them: for each, the PTX
 * module, the entry point and the parameter list in order. {@link CudaDevice#launch} refuses
 * arguments that do not fit the declaration, and a build-time test checks every declaration against
 * the PTX nvcc produced, so the two sides cannot drift apart silently (a wrong parameter list would
 * read garbage on the device).
 */
@Internal
public final class CudaKernels {

  /** A kernel parameter as the launch code passes it, with the PTX type nvcc gives it. */
  public enum Param {
    /** A device address (64-bit). */
    POINTER(".u64", 8),
    /** {@code unsigned long long} or {@code long long}: PTX declares both {@code .u64}. */
    LONG(".u64", 8),
    /** {@code int} or {@code unsigned int}: PTX declares both {@code .u32}. */
    INT(".u32", 4);

    private final String ptxType;
    private final int bytes;

    Param(String ptxType, int bytes) {
      this.ptxType = ptxType;
      this.bytes = bytes;
    }

    /** The type of the parameter in the {@code .entry} declaration, e.g. {@code .u64}. */
    public String ptxType() {
      return ptxType;
    }

    public int bytes() {
      return bytes;
    }
  }

  /** One entry point: {@code module} is the PTX resource's base name (the {@code .cu} file's). */
  public record Kernel(String module, String name, List<Param> params) {
    public Kernel {
      params = List.copyOf(params);
    }

    /**
     * Checks launch arguments against the declaration: a {@link Long} for {@link Param#POINTER} and
     * {@link Param#LONG}, an {@link Integer} for {@link Param#INT}, as many as declared.
     *
     * @throws IllegalArgumentException naming the kernel and the first argument that does not fit
     */
    public void checkArguments(Object... args) {
      if (args.length != params.size()) {
        throw new IllegalArgumentException(
            name + " takes " + params.size() + " arguments " + params + ", got " + args.length);
      }
      for (int i = 0; i < args.length; i++) {
        Param p = params.get(i);
        Object a = args[i];
        boolean fits = p == Param.INT ? a instanceof Integer : a instanceof Long;
        if (!fits) {
          throw new IllegalArgumentException(
              name
                  + " argument #"
                  + i
                  + " is declared "
                  + p
                  + ", got "
                  + (a == null ? "null" : a.getClass().getSimpleName() + " " + a));
        }
      }
    }

    /** The class-path resource holding this kernel's PTX. */
    public String resource() {
      return PTX_DIRECTORY + module + ".ptx";
    }
  }

  /** Where the build puts the PTX, on the class path. */
  public static final String PTX_DIRECTORY = "/dev/mx/cuda/ptx/";

  /**
   * {@code mx_digest_rows(const uint8_t* src, unsigned long long rows, unsigned long long* out)}.
   */
  public static final Kernel DIGEST_ROWS =
      new Kernel("mx_digest", "mx_digest_rows", List.of(Param.POINTER, Param.LONG, Param.POINTER));

  /**
   * {@code mx_digest_tail(const uint8_t* src, unsigned int words, unsigned int ragged, unsigned
   * long long* out)}.
   */
  public static final Kernel DIGEST_TAIL =
      new Kernel(
          "mx_digest",
          "mx_digest_tail",
          List.of(Param.POINTER, Param.INT, Param.INT, Param.POINTER));

  /**
   * {@code mx_digest_piece(src, dst, len, offset, words, rows, out)}: one piece of a region's
   * digest at byte {@code offset} of it, copied to {@code dst} as well unless it is 0.
   */
  public static final Kernel DIGEST_PIECE =
      new Kernel(
          "mx_digest_parts",
          "mx_digest_piece",
          List.of(
              Param.POINTER,
              Param.POINTER,
              Param.LONG,
              Param.LONG,
              Param.LONG,
              Param.LONG,
              Param.POINTER));

  /**
   * {@code mx_view_copy(src, dst, int from, int to, inner, srcInner, dstInner, n0, n1, n2, src0,
   * src1, src2, dst0, dst1, dst2)}: strides in bytes, type codes of {@link CudaCasts}.
   */
  public static final Kernel VIEW_COPY =
      new Kernel(
          "mx_copy",
          "mx_view_copy",
          List.of(
              Param.POINTER,
              Param.POINTER,
              Param.INT,
              Param.INT,
              Param.LONG,
              Param.LONG,
              Param.LONG,
              Param.LONG,
              Param.LONG,
              Param.LONG,
              Param.LONG,
              Param.LONG,
              Param.LONG,
              Param.LONG,
              Param.LONG,
              Param.LONG));

  /**
   * {@code mx_fp8_block_quantize(src, int from, dst, scales, matrices, rows, cols, int block)}:
   * element counts, type codes of {@link CudaCasts}; blocks of {@code MX_QUANT_THREADS} (256).
   */
  public static final Kernel FP8_BLOCK_QUANTIZE =
      new Kernel(
          "mx_fp8_block",
          "mx_fp8_block_quantize",
          List.of(
              Param.POINTER,
              Param.INT,
              Param.POINTER,
              Param.POINTER,
              Param.LONG,
              Param.LONG,
              Param.LONG,
              Param.INT));

  /** Every kernel the Java code launches. */
  public static final List<Kernel> ALL =
      List.of(DIGEST_ROWS, DIGEST_TAIL, DIGEST_PIECE, VIEW_COPY, FP8_BLOCK_QUANTIZE);

  private CudaKernels() {}
}
