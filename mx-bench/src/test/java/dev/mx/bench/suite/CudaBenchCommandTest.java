package dev.mx.bench.suite;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.cli.Main;
import dev.mx.cli.bench.Benchmarks;
import dev.mx.cuda.Cuda;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * {@code mx bench cuda} is registered, and where CUDA is absent it fails in one line saying why.
 */
class CudaBenchCommandTest {

  @Test
  void cudaIsABenchmark() {
    assertTrue(Benchmarks.all().containsKey("cuda"), Benchmarks.all().keySet().toString());
    assertTrue(Benchmarks.all().get("cuda").description().contains("device-to-device copy"));
  }

  @Test
  void withoutCudaTheBenchSaysWhyAndExitsOne() {
    if (Cuda.isAvailable()) {
      System.out.println(
          "CUDA is available here ("
              + Cuda.describe()
              + "): the missing-backend path cannot occur");
      return;
    }
    PrintStream err = System.err;
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
    int rc;
    try {
      rc = Main.execute("bench", "cuda");
    } finally {
      System.setErr(err);
    }
    String text = captured.toString(StandardCharsets.UTF_8);
    assertEquals(1, rc, text);
    assertTrue(text.contains("cuda bench: CUDA is unavailable"), text);
  }
}
