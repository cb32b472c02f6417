package dev.mx.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.cuda.Cuda;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * {@code mx demo --device}: a bad value is bad usage (exit 2) naming the option; where CUDA is
 * unusable, {@code --device cuda} fails in one line carrying the CUDA holder's cause (exit 1)
 * before any worker starts. With a GPU the device-resident demo itself runs in {@code
 * mx-cuda/device-check.sh}.
 */
class DemoDeviceOptionTest {

  private record Run(int rc, String out, String err) {}

  private static Run run(String... args) {
    PrintStream out = System.out;
    PrintStream err = System.err;
    ByteArrayOutputStream o = new ByteArrayOutputStream();
    ByteArrayOutputStream e = new ByteArrayOutputStream();
    System.setOut(new PrintStream(o, true, StandardCharsets.UTF_8));
    System.setErr(new PrintStream(e, true, StandardCharsets.UTF_8));
    int rc;
    try {
      rc = Main.execute(args);
    } finally {
      System.setOut(out);
      System.setErr(err);
    }
    return new Run(rc, o.toString(StandardCharsets.UTF_8), e.toString(StandardCharsets.UTF_8));
  }

  @Test
  void anUnknownDeviceIsBadUsageNamingTheOption() {
    Run r = run("demo", "--device", "tpu:0");
    assertEquals(2, r.rc(), r.err());
    assertTrue(r.err().contains("--device 'tpu:0'"), r.err());
  }

  @Test
  void withoutCudaTheDeviceDemoFailsInOneLineWithTheCauseBeforeAnyWorker() {
    Assumptions.assumeFalse(
        Cuda.isAvailable(),
        () ->
            "CUDA is available here ("
                + Cuda.describe()
                + "): the device demo runs instead (mx-cuda/device-check.sh)");
    String cause = Cuda.unavailabilityCause().getMessage();
    Run r = run("demo", "--device", "cuda");
    assertEquals(1, r.rc(), r.err());
    String[] lines = r.err().strip().split("\\R");
    String line = lines[lines.length - 1];
    assertTrue(line.startsWith("mx demo: error: --device cuda:0: "), line);
    assertTrue(line.contains(cause), line + " should carry " + cause);
    assertFalse(
        r.err().contains("memory-copy baseline") || r.err().contains("starting"),
        "no worker started: " + r.err());

    Run json = run("demo", "--device", "cuda:0", "--json");
    assertEquals(1, json.rc(), json.err());
    assertTrue(json.out().contains("\"ok\" : false"), json.out());
    assertTrue(json.out().contains(cause), json.out());
  }
}
