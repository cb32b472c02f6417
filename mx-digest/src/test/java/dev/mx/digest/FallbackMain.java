package dev.mx.digest;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Run by {@link RowKernelTest} in a JVM without the Vector API module: prints the kernel in use,
 * why, and for every golden input (in native memory, misaligned) its digest on three threads and
 * its digest copied and added in two pieces (the fused kernel).
 */
public final class FallbackMain {
  private FallbackMain() {}

  public static void main(String[] args) {
    System.out.println("kernel " + ShardDigest.kernelName(4096));
    System.out.println("cause " + ShardDigest.vectorKernelUnavailabilityCause());
    try (Arena arena = Arena.ofShared()) {
      for (GoldenVectors.Vector v : GoldenVectors.all()) {
        MemorySegment s = TestBytes.nativeCopy(arena, v.input(), 3);
        PositionedDigest copied = new PositionedDigest(s.byteSize());
        MemorySegment dst = arena.allocate(s.byteSize() + 1).asSlice(1, s.byteSize());
        long half = s.byteSize() / 2;
        copied.copyAndAdd(half, s.asSlice(half), dst.asSlice(half));
        copied.copyAndAdd(0, s.asSlice(0, half), dst.asSlice(0, half));
        String fused = dst.mismatch(s) == -1 ? copied.digest() : "copy-differs";
        System.out.println(ShardDigest.digest(s, 3) + " " + fused + "  " + v.name());
      }
    }
  }
}
