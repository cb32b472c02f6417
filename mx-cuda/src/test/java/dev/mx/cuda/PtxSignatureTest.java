package dev.mx.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * The PTX the build produced (no GPU needed): every kernel the Java code launches exists as an
 * entry point with exactly the declared parameters (count, order, types), no entry point goes
 * undeclared, and the PTX targets an architecture the H200's driver JIT-compiles, and assembles for
 * sm_90 (ptxas) without spills.
 */
class PtxSignatureTest {
  private static final Pattern ENTRY =
      Pattern.compile("\\.visible\\s+\\.entry\\s+(\\w+)\\s*\\(([^)]*)\\)");
  private static final Pattern PARAM = Pattern.compile("\\.param\\s+(\\.\\w+)\\s+(\\w+)");
  private static final Pattern TARGET =
      Pattern.compile("^\\.target\\s+sm_(\\d+)", Pattern.MULTILINE);

  /** Entry name to its parameters' PTX types, in order. */
  static Map<String, List<String>> entries(String ptx) {
    Map<String, List<String>> out = new LinkedHashMap<>();
    Matcher m = ENTRY.matcher(ptx);
    while (m.find()) {
      List<String> types = new ArrayList<>();
      Matcher p = PARAM.matcher(m.group(2));
      int index = 0;
      while (p.find()) {
        assertEquals(
            m.group(1) + "_param_" + index++, p.group(2), "parameters are numbered in order");
        types.add(p.group(1));
      }
      out.put(m.group(1), types);
    }
    return out;
  }

  private static String ptx(String resource) throws IOException {
    try (InputStream in = CudaKernels.class.getResourceAsStream(resource)) {
      assertNotNull(in, resource + " is on the class path (built by nvcc at generate-resources)");
      return new String(in.readAllBytes(), StandardCharsets.US_ASCII);
    }
  }

  @Test
  void everyDeclaredKernelMatchesItsPtxEntry() throws IOException {
    Map<String, Map<String, List<String>>> byModule = new LinkedHashMap<>();
    for (CudaKernels.Kernel k : CudaKernels.ALL) {
      Map<String, List<String>> entries =
          byModule.computeIfAbsent(
              k.resource(),
              r -> {
                try {
                  return entries(ptx(r));
                } catch (IOException e) {
                  throw new AssertionError(e);
                }
              });
      List<String> actual = entries.get(k.name());
      assertNotNull(
          actual,
          k.name() + " is an entry point of " + k.resource() + " (found " + entries.keySet() + ")");
      List<String> declared = k.params().stream().map(CudaKernels.Param::ptxType).toList();
      assertEquals(
          declared, actual, k.name() + ": parameter types in order (Java " + k.params() + ")");
    }
    // And nothing in the PTX that Java does not know how to launch.
    Set<String> declared = new TreeSet<>();
    CudaKernels.ALL.forEach(k -> declared.add(k.name()));
    Set<String> found = new TreeSet<>();
    byModule.values().forEach(m -> found.addAll(m.keySet()));
    assertEquals(declared, found);
  }

  @Test
  void ptxTargetsAnArchitectureTheDriverJits() throws IOException {
    for (String module : List.of("mx_digest", "mx_copy")) {
      String text = ptx(CudaKernels.PTX_DIRECTORY + module + ".ptx");
      Matcher m = TARGET.matcher(text);
      assertTrue(m.find(), module + " has a .target line");
      int sm = Integer.parseInt(m.group(1));
      assertTrue(
          sm >= 80 && sm <= 90,
          module + " targets sm_" + sm + "; the H200 driver JITs compute_90 and lower");
      assertTrue(text.contains(".address_size 64"), module + " uses 64-bit addresses");
    }
  }

  /** ptxas from the toolkit that built the PTX: next to nvcc on PATH, or under /usr/local/cuda*. */
  private static Path ptxas() {
    List<Path> candidates = new ArrayList<>();
    for (String dir : System.getenv().getOrDefault("PATH", "").split(":")) {
      candidates.add(Path.of(dir, "ptxas"));
    }
    candidates.add(Path.of("/usr/local/cuda/bin/ptxas"));
    for (Path p : candidates) {
      if (Files.isExecutable(p)) {
        return p;
      }
    }
    return null;
  }

  @Test
  void ptxAssemblesForTheH200WithoutSpills() throws Exception {
    Path ptxas = ptxas();
    if (ptxas == null) {
      System.out.println(
          "SKIPPED: no ptxas (CUDA toolkit) on PATH or in /usr/local/cuda/bin to assemble the PTX");
      Assumptions.abort("no ptxas");
    }
    Path dir =
        Files.createDirectories(
            Path.of(System.getProperty("mx.test.scratch", "target/test-scratch")));
    for (String module : List.of("mx_digest", "mx_copy")) {
      Path in = dir.resolve(module + ".ptx");
      Files.writeString(
          in, ptx(CudaKernels.PTX_DIRECTORY + module + ".ptx"), StandardCharsets.US_ASCII);
      // sm_90 is the H100/H200: what the driver's JIT does with this PTX there.
      Process p =
          new ProcessBuilder(
                  ptxas.toString(),
                  "-arch=sm_90",
                  "-v",
                  "-o",
                  dir.resolve(module + ".cubin").toString(),
                  in.toString())
              .redirectErrorStream(true)
              .start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      assertTrue(p.waitFor(120, TimeUnit.SECONDS), "ptxas finished");
      assertEquals(0, p.exitValue(), "ptxas " + module + ":\n" + out);
      assertTrue(out.contains("0 bytes spill stores"), module + " spills registers:\n" + out);
      assertFalse(
          out.matches("(?s).*[1-9]\\d* bytes spill stores.*"),
          module + " spills registers:\n" + out);
    }
  }

  @Test
  void theParserReadsAKnownDeclaration() {
    String sample =
        ".visible .entry k(\n\t.param .u64 k_param_0,\n\t.param .u32 k_param_1\n)\n{\n}";
    assertEquals(Map.of("k", List.of(".u64", ".u32")), entries(sample));
  }

  @Test
  void launchesWithTheWrongArgumentsAreRefusedBeforeTheDriver() {
    CudaKernels.Kernel k = CudaKernels.DIGEST_TAIL;
    k.checkArguments(1L, 2, 3, 4L);
    IllegalArgumentException count =
        assertThrows(IllegalArgumentException.class, () -> k.checkArguments(1L, 2, 3));
    assertTrue(count.getMessage().contains("mx_digest_tail takes 4"), count.getMessage());
    IllegalArgumentException type =
        assertThrows(IllegalArgumentException.class, () -> k.checkArguments(1L, 2L, 3, 4L));
    assertTrue(type.getMessage().contains("#1 is declared INT"), type.getMessage());
    assertThrows(IllegalArgumentException.class, () -> k.checkArguments(1, 2, 3, 4L));
  }
}
