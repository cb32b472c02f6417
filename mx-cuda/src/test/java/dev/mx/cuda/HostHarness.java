package dev.mx.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * Builds and runs the host harnesses of the device headers ({@code src/test/cuda}) with the
 * machine's C++ compiler: the kernels' arithmetic checked without a GPU.
 */
final class HostHarness {
  private HostHarness() {}

  /** The C++ compiler; skips the test, printing why, when there is none. */
  static Path compilerOrSkip(String what) {
    Path cxx = compiler();
    if (cxx == null) {
      System.out.println("SKIPPED: no C++ compiler (g++, c++, clang++) on PATH to build " + what);
      Assumptions.abort("no C++ compiler on PATH");
    }
    return cxx;
  }

  /**
   * Compiles {@code src/test/cuda/NAME.cpp} (the device headers of {@code src/main/cuda} on its
   * include path) into the scratch folder; skips the test, printing why, without a compiler.
   */
  static Path build(String name) throws IOException, InterruptedException {
    Path cxx = compilerOrSkip("the " + name);
    Path exe = scratch().resolve(name);
    String src = System.getProperty("mx.cuda.sourceDir", "src/main/cuda");
    String testSrc = System.getProperty("mx.cuda.testSourceDir", "src/test/cuda");
    run(
        List.of(
            cxx.toString(),
            "-O2",
            "-std=c++17",
            "-I",
            src,
            "-o",
            exe.toString(),
            testSrc + "/" + name + ".cpp"),
        null);
    return exe;
  }

  /** Where harness binaries and outputs go. */
  static Path scratch() throws IOException {
    return Files.createDirectories(
        Path.of(System.getProperty("mx.test.scratch", "target/test-scratch")));
  }

  private static Path compiler() {
    for (String c : List.of("g++", "c++", "clang++")) {
      for (String dir : System.getenv().getOrDefault("PATH", "/usr/bin").split(":")) {
        Path p = Path.of(dir, c);
        if (Files.isExecutable(p)) {
          return p;
        }
      }
    }
    return null;
  }

  /**
   * Runs {@code command}, its stdout to {@code stdout} (null: captured for the failure message).
   */
  static void run(List<String> command, Path stdout) throws IOException, InterruptedException {
    ProcessBuilder pb = new ProcessBuilder(command);
    if (stdout != null) {
      pb.redirectOutput(stdout.toFile());
      pb.redirectError(ProcessBuilder.Redirect.INHERIT);
    } else {
      pb.redirectErrorStream(true);
    }
    Process p = pb.start();
    String text =
        stdout == null ? new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8) : "";
    if (!p.waitFor(120, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new AssertionError(command.getFirst() + " did not finish within 120 s");
    }
    assertEquals(0, p.exitValue(), String.join(" ", command) + " failed:\n" + text);
  }
}
