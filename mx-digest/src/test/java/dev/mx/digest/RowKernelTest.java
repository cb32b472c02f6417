package dev.mx.digest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The Vector API kernel, the scalar fallback, and the choice between them. */
class RowKernelTest {
  private static final int ROW = ShardDigest.ROW_BYTES;

  @Test
  void theVectorKernelTakesInputsThatFitInCacheWhenTheModuleIsResolved() {
    // This module's surefire configuration adds jdk.incubator.vector, so the vector kernel must be
    // available.
    assertTrue(ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent());
    assertNull(ShardDigest.vectorKernelUnavailabilityCause());
    assertTrue(ShardDigest.kernelName(ROW).startsWith("vector-"), ShardDigest.kernelName(ROW));
    assertTrue(ShardDigest.kernelName(RowKernels.VECTOR_MAX_BYTES).startsWith("vector-"));
    assertEquals("scalar", ShardDigest.kernelName(RowKernels.VECTOR_MAX_BYTES + ROW));
    assertEquals("scalar", ShardDigest.kernelName(1L << 30));
  }

  @Test
  void vectorAndScalarKernelsAgreeOnEveryKindOfSegment() {
    Random random = new Random(12);
    RowKernel vector = RowKernels.vectorIfAvailable();
    RowKernel scalar = ScalarRowKernel.INSTANCE;
    try (Arena arena = Arena.ofConfined()) {
      for (int i = 0; i < 50; i++) {
        int rows = 1 + random.nextInt(6);
        int[] words = new int[rows * ShardDigest.ROW_WORDS + 2];
        for (int w = 0; w < words.length; w++) {
          words[w] =
              switch (i % 3) {
                case 0 -> random.nextInt();
                case 1 -> random.nextBoolean() ? Integer.MIN_VALUE : Integer.MAX_VALUE;
                default -> -random.nextInt(70000);
              };
        }
        MemorySegment ints = MemorySegment.ofArray(words);
        byte[] bytes = ints.toArray(ValueLayout.JAVA_BYTE);
        List<MemorySegment> kinds = new ArrayList<>();
        kinds.add(ints);
        kinds.add(MemorySegment.ofArray(bytes));
        kinds.add(MemorySegment.ofArray(ints.toArray(ValueLayout.JAVA_LONG_UNALIGNED)));
        kinds.add(TestBytes.nativeCopy(arena, bytes, i % 8));
        RowSums expected = scalar.sumRows(MemorySegment.ofArray(bytes), 0, rows);
        for (MemorySegment s : kinds) {
          assertEquals(
              expected, vector.sumRows(s.asSlice(0, (long) rows * ROW), 0, rows), "vector, " + s);
          assertEquals(expected, scalar.sumRows(s, 0, rows), "scalar, " + s);
        }
        assertEquals(
            ReferenceDigest.digest(bytes), ShardDigest.digest(kinds.get(0)), "int[] heap segment");
      }
    }
  }

  @Test
  void bothFusedCopyKernelsSumAsTheirDigestKernelAndCopyEveryByte() {
    Random random = new Random(41);
    try (Arena arena = Arena.ofConfined()) {
      for (RowKernel kernel : List.of(RowKernels.vectorIfAvailable(), ScalarRowKernel.INSTANCE)) {
        for (int i = 0; i < 30; i++) {
          int rows = 1 + random.nextInt(5);
          byte[] bytes = new byte[rows * ROW];
          random.nextBytes(bytes);
          if (i % 3 == 1) {
            // Words at the extremes: the vector kernel's split of each word into halves.
            for (int w = 0; w < bytes.length / 4; w++) {
              TestBytes.putWord(bytes, w, random.nextBoolean() ? Integer.MIN_VALUE : -1);
            }
          }
          MemorySegment src = TestBytes.nativeCopy(arena, bytes, i % 8);
          MemorySegment dst =
              arena.allocate(bytes.length + 8L, 64).asSlice((i * 3) % 8, bytes.length);
          RowSums expected =
              ScalarRowKernel.INSTANCE.sumRows(MemorySegment.ofArray(bytes), 0, rows);
          assertEquals(expected, kernel.copyRows(src, 0, dst, 0, rows), kernel.name());
          assertEquals(-1L, src.mismatch(dst), kernel.name() + " copied every byte");
        }
      }
    }
  }

  @Test
  void bothPartialRowKernelsSumEveryWordCountExactlyAndCopyOnlyThoseWords() {
    Random random = new Random(41);
    byte[] src = new byte[ROW + 64];
    random.nextBytes(src);
    // Words at both extremes, so the wrapped int lanes and the high halves carry.
    for (int at = 0; at < 64; at += 4) {
      MemorySegment.ofArray(src).set(RowKernel.WORD, at, at % 8 == 0 ? Integer.MIN_VALUE : -1);
    }
    for (RowKernel kernel : List.of(RowKernels.vectorIfAvailable(), ScalarRowKernel.INSTANCE)) {
      for (int start : new int[] {0, 4, 6, 60}) {
        for (int count = 0; count <= ROW / Integer.BYTES; count += count < 40 ? 1 : 97) {
          long expected = 0;
          for (int w = 0; w < count; w++) {
            expected += MemorySegment.ofArray(src).get(RowKernel.WORD, start + 4L * w);
          }
          byte[] dst = new byte[src.length];
          long copied =
              kernel.copyWordSum(
                  MemorySegment.ofArray(src), start, MemorySegment.ofArray(dst), start, count);
          String at = kernel.name() + " start " + start + " count " + count;
          assertEquals(expected, copied, at);
          assertEquals(
              expected, kernel.copyWordSum(MemorySegment.ofArray(src), start, null, 0, count), at);
          for (int b = 0; b < dst.length; b++) {
            boolean inside = b >= start && b < start + 4L * count;
            assertEquals(inside ? src[b] : 0, dst[b], at + " byte " + b);
          }
        }
      }
    }
  }

  @Test
  void withoutTheVectorModuleTheDigestFallsBackAndStaysExact()
      throws IOException, InterruptedException {
    // A real JVM without --add-modules jdk.incubator.vector, digesting every golden input.
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    String classPath =
        System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    Process p =
        new ProcessBuilder(java, "-cp", classPath, FallbackMain.class.getName())
            .redirectErrorStream(true)
            .start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(60, TimeUnit.SECONDS), "child JVM did not finish: " + out);
    assertEquals(0, p.exitValue(), out);
    List<String> lines = out.lines().filter(l -> !l.startsWith("WARNING")).toList();
    assertEquals("kernel scalar", lines.get(0), out);
    assertTrue(
        lines
            .get(1)
            .startsWith(
                "cause java.lang.UnsupportedOperationException: module jdk.incubator.vector"),
        out);
    List<GoldenVectors.Vector> golden = GoldenVectors.all();
    assertEquals(golden.size() + 2, lines.size(), out);
    for (int i = 0; i < golden.size(); i++) {
      String d = golden.get(i).digest();
      assertEquals(d + " " + d + "  " + golden.get(i).name(), lines.get(i + 2));
    }
  }
}
