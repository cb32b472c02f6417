package dev.mx.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every public top-level type of the published modules says how far integrators may rely on it:
 * {@code @Stable}, {@code @Experimental} or {@code @Internal} (dev.mx.api.annotation), on the type
 * or on its package; and the machinery packages (stage, cast, reslice, memory) are internal. The
 * binary-compatibility check (japicmp) excludes what is not stable.
 */
class StabilityMarkersTest {
  private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
  static final List<String> MODULES =
      List.of(
          "mx-refit",
          "mx-metadata",
          "mx-rl",
          "mx-transport-mem",
          "mx-transport-shm",
          "mx-transport-ucx",
          "mx-transport-nixl",
          "mx-cuda");
  private static final Pattern TOP_LEVEL =
      Pattern.compile(
          "(?m)^public\\s+(?:(?:final|abstract|sealed|non-sealed|static)\\s+)*"
              + "(?:class|interface|record|enum|@interface)\\s+(\\w+)");
  private static final Pattern MARKER = Pattern.compile("(?m)^@(Stable|Experimental|Internal)\\b");
  private static final Pattern MACHINERY = Pattern.compile("\\.(stage|cast|reslice|memory)(\\.|$)");

  @Test
  void everyPublicTypeOfThePublishedModulesCarriesAStabilityMarker() throws IOException {
    List<String> unmarked = new ArrayList<>();
    List<String> machineryNotInternal = new ArrayList<>();
    int checked = 0;
    for (String module : MODULES) {
      Path src = ROOT.resolve(module).resolve("src/main/java");
      try (Stream<Path> files = Files.walk(src)) {
        for (Path f : (Iterable<Path>) files::iterator) {
          String name = f.getFileName().toString();
          if (!name.endsWith(".java") || name.equals("package-info.java")) {
            continue;
          }
          String text = Files.readString(f);
          Matcher decl = TOP_LEVEL.matcher(text);
          if (!decl.find()) {
            continue; // package-private
          }
          checked++;
          String before = text.substring(0, decl.start());
          Path info = f.resolveSibling("package-info.java");
          String marker = lastMarker(before);
          if (marker == null && Files.exists(info)) {
            marker = lastMarker(Files.readString(info));
          }
          String pkg = src.relativize(f.getParent()).toString().replace('/', '.');
          String type = module + ": " + pkg + "." + decl.group(1);
          if (marker == null) {
            unmarked.add(type);
          } else if (MACHINERY.matcher(pkg).find() && !marker.equals("Internal")) {
            machineryNotInternal.add(type + " (@" + marker + ")");
          }
        }
      }
    }
    assertTrue(checked > 120, "public types checked: " + checked);
    assertEquals(List.of(), unmarked, "public types without @Stable, @Experimental or @Internal");
    assertEquals(List.of(), machineryNotInternal, "machinery packages are @Internal");
  }

  private static String lastMarker(String text) {
    Matcher m = MARKER.matcher(text);
    String last = null;
    while (m.find()) {
      last = m.group(1);
    }
    return last;
  }
}
