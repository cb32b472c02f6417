package dev.mx.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.refit.ReceiverConfig;
import dev.mx.refit.VerifyMode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/** The documents agree with the code and with their sources. */
class DocsTest {
  private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();

  private static String read(String path) throws IOException {
    return Files.readString(ROOT.resolve(path));
  }

  @Test
  void embeddingsVerificationTableListsEveryModeInOrderWithTheRealDefault() throws IOException {
    String doc = read("docs/EMBEDDING.md");
    String section = doc.substring(doc.indexOf("## Verification modes"));
    section = section.substring(0, section.indexOf("\n## ", 3));
    List<String> modes = new ArrayList<>();
    String marked = null;
    Matcher row = Pattern.compile("(?m)^\\| `([a-z-]+)`( \\(default\\))? \\|").matcher(section);
    while (row.find()) {
      modes.add(row.group(1));
      if (row.group(2) != null) {
        marked = row.group(1);
      }
    }
    List<String> expected = Stream.of(VerifyMode.values()).map(VerifyMode::label).toList();
    assertEquals(expected, modes, "EMBEDDING.md's verification table rows");
    assertEquals(ReceiverConfig.defaults().verify().label(), marked, "the row marked (default)");
  }

  /**
   * Every "§n" cited in code and docs names a heading of ARCHITECTURE.md; none points into
   * ModelExpress's design notes, which the repository does not hold.
   */
  @Test
  void everySectionReferenceNamesASectionThatExists() throws IOException {
    Set<String> sections = new TreeSet<>();
    Matcher h =
        Pattern.compile("(?m)^#{2,4} (\\d+(?:\\.\\d+)*)\\.? ")
            .matcher(read("docs/ARCHITECTURE.md"));
    while (h.find()) {
      sections.add(h.group(1));
    }
    assertTrue(sections.contains("5.3"), sections.toString());
    Pattern ref = Pattern.compile("§ ?(\\d+(?:\\.\\d+)*)");
    List<String> broken = new ArrayList<>();
    try (Stream<Path> files = Files.walk(ROOT)) {
      for (Path f : files.filter(Files::isRegularFile).filter(DocsTest::isSourceOrDoc).toList()) {
        String text = Files.readString(f, StandardCharsets.UTF_8);
        Matcher m = ref.matcher(text);
        while (m.find()) {
          String before = text.substring(Math.max(0, m.start() - 40), m.start());
          // A "§" after another document's name is a reference into that document.
          boolean otherDocument =
              before.matches(
                  "(?s).*\\b(README|VERSIONS|EMBEDDING|PERFORMANCE|PLAN-FORMAT)\\S*\\s*$");
          // ModelExpress's own design notes are not in the repository: say what is meant instead.
          boolean outside = before.matches("(?s).*\\b(MX|ModelExpress)[\\s*/]*\\(?$");
          if (outside || (!otherDocument && !sections.contains(m.group(1)))) {
            broken.add(ROOT.relativize(f) + ": " + before.replace('\n', ' ') + m.group());
          }
        }
      }
    }
    assertTrue(
        broken.isEmpty(),
        "references to sections ARCHITECTURE.md lacks:\n" + String.join("\n", broken));
  }

  private static boolean isSourceOrDoc(Path f) {
    String p = ROOT.relativize(f).toString().replace('\\', '/');
    if (p.startsWith(".git/") || p.contains("/target/") || p.startsWith("docs/performance/")) {
      return false; // the performance history quotes old numbering verbatim
    }
    return p.endsWith(".java") || p.endsWith(".md") || p.endsWith(".dot") || p.equals("mx");
  }

  @Test
  void theArchitecturePictureIsWhatItsSourceProduces() throws Exception {
    Path dot = ROOT.resolve("docs/architecture/refit-flow.dot");
    Path svg = ROOT.resolve("docs/architecture/refit-flow.svg");
    assertTrue(Files.exists(svg), "scripts/diagrams writes " + svg + "; commit it");
    assertTrue(
        Files.getLastModifiedTime(svg).compareTo(Files.getLastModifiedTime(dot)) >= 0
            || Files.readString(svg).contains("<title>refit_flow</title>"),
        "the SVG is older than its source and not generated from it");
    String version;
    try {
      Process p = new ProcessBuilder("dot", "-V").redirectErrorStream(true).start();
      version = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
      p.waitFor(60, TimeUnit.SECONDS);
    } catch (IOException e) {
      Assumptions.abort(
          "Graphviz is not installed (apt-get install -y graphviz): " + e.getMessage());
      return;
    }
    String committed = Files.readString(svg);
    Matcher v = Pattern.compile("graphviz version (\\S+)").matcher(version);
    Matcher cv = Pattern.compile("graphviz version (\\S+)").matcher(committed);
    Assumptions.assumeTrue(
        v.find() && cv.find() && v.group(1).equals(cv.group(1)),
        "the SVG was generated by Graphviz "
            + (cv.find(0) ? cv.group(1) : "?")
            + ", this machine has '"
            + version
            + "': layouts differ between versions");
    Process p = new ProcessBuilder("dot", "-Tsvg", dot.toString()).start();
    String fresh = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(60, TimeUnit.SECONDS));
    assertEquals(0, p.exitValue(), "dot -Tsvg " + dot);
    assertEquals(
        withoutComments(fresh),
        withoutComments(committed),
        "docs/architecture/refit-flow.svg is stale: run scripts/diagrams and commit the SVG");
  }

  private static String withoutComments(String svg) {
    return svg.replaceAll("(?s)<!--.*?-->", "").strip();
  }

  @Test
  void thePerformancePageAndItsPlotsAreWhatTheSavedBenchJsonProduces() throws Exception {
    Process p;
    try {
      p =
          new ProcessBuilder("python3", "scripts/perf-page", "--check")
              .directory(ROOT.toFile())
              .redirectErrorStream(true)
              .start();
    } catch (IOException e) {
      Assumptions.abort(
          "python3 is not installed, scripts/perf-page cannot run: " + e.getMessage());
      return;
    }
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(120, TimeUnit.SECONDS), "scripts/perf-page --check did not finish");
    assertEquals(0, p.exitValue(), out);
  }

  /**
   * {@code --help} and an unknown argument must never start a measurement: a measurement overwrites
   * the saved data the page is drawn from. Both exit before touching docs/performance/data.
   */
  @Test
  void perfPageHelpAndUnknownArgumentsMeasureNothing() throws Exception {
    Path data = ROOT.resolve("docs/performance/data");
    java.util.Map<Path, java.nio.file.attribute.FileTime> before = modified(data);
    for (List<String> args :
        List.of(
            List.of("--help"),
            List.of("-h"),
            List.of("--bogus"),
            List.of("--only"),
            List.of("--render", "extra"))) {
      List<String> cmd = new ArrayList<>(List.of("python3", "scripts/perf-page"));
      cmd.addAll(args);
      Process p;
      try {
        p = new ProcessBuilder(cmd).directory(ROOT.toFile()).redirectErrorStream(true).start();
      } catch (IOException e) {
        Assumptions.abort(
            "python3 is not installed, scripts/perf-page cannot run: " + e.getMessage());
        return;
      }
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      assertTrue(p.waitFor(60, TimeUnit.SECONDS), args + " did not finish");
      boolean help = args.getFirst().startsWith("-h") || args.getFirst().equals("--help");
      assertEquals(help ? 0 : 2, p.exitValue(), args + ": " + out);
      assertTrue(
          help
              ? out.contains("scripts/perf-page --render")
              : out.contains("usage: scripts/perf-page"),
          args + ": " + out);
    }
    assertEquals(before, modified(data), "saved perf data was rewritten");
  }

  /**
   * {@code scripts/under-load --help} prints its help and starts no load and no command; an unknown
   * option is refused with the usage line. Either way it ends at once, which the bounded wait
   * checks: the default command is a whole {@code ./mvnw verify}.
   */
  @Test
  void underLoadHelpAndUnknownOptionsStartNothing() throws Exception {
    for (List<String> args : List.of(List.of("--help"), List.of("-h"), List.of("--bogus"))) {
      List<String> cmd = new ArrayList<>(List.of("bash", "scripts/under-load"));
      cmd.addAll(args);
      Process p =
          new ProcessBuilder(cmd).directory(ROOT.toFile()).redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      assertTrue(p.waitFor(60, TimeUnit.SECONDS), args + " did not finish");
      boolean help = !args.getFirst().equals("--bogus");
      assertEquals(help ? 0 : 2, p.exitValue(), args + ": " + out);
      assertTrue(
          help
              ? out.contains("-n N          busy processes") && !out.contains("busy processes (cap")
              : out.contains("unknown option '--bogus' (usage: scripts/under-load"),
          args + ": " + out);
    }
  }

  private static java.util.Map<Path, java.nio.file.attribute.FileTime> modified(Path dir)
      throws IOException {
    java.util.Map<Path, java.nio.file.attribute.FileTime> m = new java.util.TreeMap<>();
    try (var files = Files.walk(dir)) {
      for (Path f : (Iterable<Path>) files::iterator) {
        m.put(f, Files.getLastModifiedTime(f));
      }
    }
    return m;
  }
}
