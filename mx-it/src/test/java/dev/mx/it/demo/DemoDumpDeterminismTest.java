package dev.mx.it.demo;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two runs of the same refit, in two JVMs (an unordered map iterates differently per JVM), dump
 * byte-identical safetensors files: the {@code __metadata__} key order used to vary.
 */
class DemoDumpDeterminismTest {

  @Test
  void twoRunsWriteTheSameBytes(@TempDir Path first, @TempDir Path second) throws Exception {
    for (Path dump : new Path[] {first, second}) {
      Process p =
          new ProcessBuilder(
                  List.of(
                      Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                      "--enable-native-access=ALL-UNNAMED",
                      "--add-modules",
                      "jdk.incubator.vector",
                      "-cp",
                      System.getProperty(
                          "surefire.test.class.path", System.getProperty("java.class.path")),
                      "dev.mx.cli.Main",
                      "demo",
                      "--in-process",
                      "--model",
                      "tiny-llama",
                      "--trainer",
                      "tp=2",
                      "--inference",
                      "tp=2",
                      "--steps",
                      "1",
                      "--dump",
                      dump.toString()))
              .redirectOutput(ProcessBuilder.Redirect.DISCARD)
              .redirectError(dump.resolve("stderr.txt").toFile())
              .start();
      assertTrue(p.waitFor(300, TimeUnit.SECONDS), "the demo did not finish");
      assertEquals(0, p.exitValue(), Files.readString(dump.resolve("stderr.txt")));
    }
    for (int rank = 0; rank < 2; rank++) {
      String name = "receiver-" + rank + ".safetensors";
      assertArrayEquals(
          Files.readAllBytes(first.resolve(name)), Files.readAllBytes(second.resolve(name)), name);
    }
  }
}
