package dev.mx.cuda;

import dev.mx.api.annotation.Internal;

/**
 * Prints what {@link Cuda} found (the driver and each device, or why CUDA is unavailable) and exits
 * 0 when CUDA is usable, 1 otherwise, and 2 when the CPU digest's self-check fails (a class path
 * missing part of BLAKE2b): the first step of {@code mx-cuda/device-check.sh run}.
 */
@Internal
public final class CudaProbe {
  private CudaProbe() {}

  /** The digest of no bytes (golden vector {@code empty}). */
  private static final String EMPTY_DIGEST = "c804ce198ec337e3dc762bdd1a09aece";

  public static void main(String[] args) {
    String empty = dev.mx.digest.ShardDigest.hashScalars(0);
    if (!empty.equals(EMPTY_DIGEST)) {
      System.out.println("cpu digest self-check FAILED: " + empty + " != " + EMPTY_DIGEST);
      System.exit(2);
    }
    System.out.println(Cuda.describe());
    if (!Cuda.isAvailable()) {
      System.exit(1);
    }
  }
}
