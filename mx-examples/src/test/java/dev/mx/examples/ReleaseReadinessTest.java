package dev.mx.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * What a release needs is in the build, checked without running it: reproducible jars, a deploy
 * target, signing only when a key is given, and a NOTICE naming every third-party artifact the
 * launcher puts on the class path.
 */
class ReleaseReadinessTest {
  private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();

  private static String timestamp(String pom) {
    Matcher m =
        Pattern.compile("<project.build.outputTimestamp>([^<]+)</project.build.outputTimestamp>")
            .matcher(pom);
    assertTrue(m.find(), "no project.build.outputTimestamp");
    return m.group(1);
  }

  @Test
  void rootPomAndBomAreReproducibleAndDeployable() throws Exception {
    String root = Files.readString(ROOT.resolve("pom.xml"));
    String bom = Files.readString(ROOT.resolve("mx-bom/pom.xml"));
    assertTrue(
        timestamp(root).matches("\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ"), timestamp(root));
    assertEquals(
        timestamp(root), timestamp(bom), "mx-bom's outputTimestamp differs from the root's");
    for (String pom : List.of(root, bom)) {
      assertTrue(pom.contains("<repository><id>mx-releases</id>"), "no release repository");
      assertTrue(
          pom.contains("<snapshotRepository><id>mx-snapshots</id>"), "no snapshot repository");
      assertTrue(pom.contains("<mx.deploy.url>"), "no mx.deploy.url");
    }
    Matcher sign =
        Pattern.compile(
                "(?s)<id>sign</id>\\s*<activation>\\s*<property><name>gpg.keyname</name></property>"
                    + ".*?<artifactId>maven-gpg-plugin</artifactId>")
            .matcher(root);
    assertTrue(sign.find(), "signing must be a profile activated only by -Dgpg.keyname");
  }

  @Test
  void noticeNamesEveryThirdPartyArtifactTheLauncherLoads() throws Exception {
    Path lib = ROOT.resolve("mx-cli/target/lib");
    if (!Files.isDirectory(lib)) {
      System.err.println("SKIPPED: " + lib + " is not built (it is in a full ./mvnw verify)");
      Assumptions.abort(lib + " is not built (mx-cli's package phase makes it)");
    }
    String notice = Files.readString(ROOT.resolve("NOTICE"));
    List<String> missing = new ArrayList<>();
    int checked = 0;
    try (Stream<Path> jars = Files.list(lib)) {
      for (Path jar : (Iterable<Path>) jars::iterator) {
        String name = jar.getFileName().toString();
        if (name.startsWith("mx-") || !name.endsWith(".jar")) {
          continue;
        }
        String artifact = name.replaceFirst("-\\d.*$", "");
        checked++;
        boolean named =
            notice.contains(artifact)
                || (artifact.startsWith("prometheus-metrics-")
                    && notice.contains("prometheus-metrics-*"));
        if (!named) {
          missing.add(artifact);
        }
      }
    }
    assertTrue(checked > 20, "third-party jars checked: " + checked);
    assertEquals(
        List.of(), missing, "artifacts on the launcher's class path that NOTICE does not name");
  }
}
