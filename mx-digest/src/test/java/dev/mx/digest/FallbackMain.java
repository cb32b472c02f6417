package dev.mx.digest;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Run by {@link RowKernelTest} in a JVM without the Vector API module: prints the kernel in use,
 * why, and the digest of every golden input (in native memory, misaligned, on three threads).
 */
public final class FallbackMain {
  private FallbackMain() {}

  public static void main(String[] args) {
    System.out.println("kernel " + ShardDigest.kernelName(4096));
    System.out.println("cause " + ShardDigest.vectorKernelUnavailabilityCause());
    try (Arena arena = Arena.ofShared()) {
      for (GoldenVectors.Vector v : GoldenVectors.all()) {
        MemorySegment s = TestBytes.nativeCopy(arena, v.input(), 3);
        System.out.println(ShardDigest.digest(s, 3) + "  " + v.name());
      }
    }
  }
}
