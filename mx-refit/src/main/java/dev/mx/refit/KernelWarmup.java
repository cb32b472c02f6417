package dev.mx.refit;

import dev.mx.api.DType;
import dev.mx.api.annotation.Internal;
import dev.mx.api.digest.DigestParts;
import dev.mx.api.digest.DigestProvider;
import dev.mx.refit.reslice.AsStrided;
import dev.mx.refit.reslice.ViewCopy;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Compiles the receiver's hot loops before the first refit needs them: a cold JVM runs the digest
 * kernels interpreted until the JIT compiles them, which made the first step's verification take
 * seconds where a warm one takes a fraction. Start it when the process starts, while the trainers
 * write their first step ({@link #inBackground}); it works on a few MiB of its own memory and
 * touches nothing of the receiver's.
 */
@Internal
public final class KernelWarmup {
  private static final Logger LOG = LoggerFactory.getLogger(KernelWarmup.class);

  /** Bytes digested per round: past the row kernel's small-input path, well inside the cache. */
  private static final long BYTES = 1L << 20;

  /**
   * Rounds: enough calls for the JIT's optimizing tier to compile each kernel on its own (the
   * Vector API kernels run orders of magnitude slower until it has), measured on the demo's cold
   * step: the staged-shard replay showed in profiles until the copy ran this often.
   */
  private static final int ROUNDS = 400;

  private KernelWarmup() {}

  /**
   * Starts warming up on a daemon thread named {@code mx-kernel-warmup} and returns it (join it to
   * wait). Failures are logged, never thrown: warming is an optimisation.
   */
  public static Thread inBackground(DigestProvider digests) {
    Thread t =
        Thread.ofPlatform()
            .daemon()
            .name("mx-kernel-warmup")
            .start(
                () -> {
                  try {
                    long start = System.nanoTime();
                    run(digests);
                    LOG.debug(
                        "kernels warmed up in {} ms", (System.nanoTime() - start) / 1_000_000);
                  } catch (RuntimeException e) {
                    LOG.warn(
                        "kernel warm-up failed (the first refit will be slower): {}", e.toString());
                  }
                });
    return t;
  }

  /**
   * Runs the digest provider's own warm-up ({@link DigestProvider#warmUp}: every kernel it may
   * pick), the digest calls the receiver makes (whole regions, pieces cut off word and row, and the
   * same pieces copied and digested in one pass) and the strided copy that replays staged shards
   * into place.
   */
  public static void run(DigestProvider digests) {
    digests.warmUp();
    // Shared, as the receiver's buffers and live weights are: code the JIT compiled on confined
    // segments was deoptimized at the first shared one and compiled again during the cold step.
    try (Arena arena = Arena.ofShared()) {
      MemorySegment bytes = arena.allocate(BYTES, 64);
      MemorySegment landed = arena.allocate(BYTES, 64);
      // A bf16 [rows, cols] tensor whose left half of the columns goes to a contiguous tensor: the
      // row-parallel re-slice of a staged shard.
      long rows = 512;
      long cols = BYTES / 2 / rows / 2;
      MemorySegment half = arena.allocate(rows * cols, 64);
      ViewCopy columns =
          ViewCopy.compile(
              "kernel warm-up",
              bytes,
              DType.BF16,
              new AsStrided(0, new long[] {rows, cols / 2}, new long[] {cols, 1}),
              half,
              DType.BF16,
              new AsStrided(0, new long[] {rows, cols / 2}, new long[] {cols / 2, 1}));
      for (long i = 0; i < BYTES; i += Long.BYTES) {
        bytes.set(ValueLayout.JAVA_LONG_UNALIGNED, i, i * 0x9E3779B97F4A7C15L);
      }
      long cut = BYTES / 2 + 4096 + 3;
      for (int round = 0; round < ROUNDS; round++) {
        columns.run();
        String whole = digests.digest(bytes);
        Optional<DigestParts> parts = digests.parts(BYTES);
        if (parts.isPresent()) {
          DigestParts p = parts.get();
          p.add(cut, bytes.asSlice(cut));
          p.add(0, bytes.asSlice(0, cut));
          // The fused copy-and-digest a CPU transport runs on each read it lands.
          DigestParts q = digests.parts(BYTES).orElseThrow();
          q.copyAndAdd(cut, bytes.asSlice(cut), landed.asSlice(cut));
          q.copyAndAdd(0, bytes.asSlice(0, cut), landed.asSlice(0, cut));
          if (!p.digest().equals(whole) || !q.digest().equals(whole)) {
            throw new IllegalStateException(
                "digest provider '" + digests.name() + "': pieces and whole disagree");
          }
        }
      }
    }
  }
}
