package dev.mx.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** mx-bom pins the same third-party versions the build tests with (the root pom's properties). */
class BomVersionsTest {

  private static Map<String, String> versions(Path pom) throws Exception {
    Map<String, String> out = new LinkedHashMap<>();
    Matcher m = Pattern.compile("<([a-z0-9.]+\\.version)>([^<]+)</").matcher(Files.readString(pom));
    while (m.find()) {
      out.put(m.group(1), m.group(2));
    }
    return out;
  }

  @Test
  void bomVersionsEqualTheTestedOnes() throws Exception {
    Path root = Path.of("..").toAbsolutePath().normalize();
    Map<String, String> tested = versions(root.resolve("pom.xml"));
    Map<String, String> bom = versions(root.resolve("mx-bom/pom.xml"));
    for (String lib :
        new String[] {
          "slf4j.version",
          "guice.version",
          "guava.version",
          "jackson.version",
          "bouncycastle.version",
          "jucx.version",
          "lettuce.version",
          "netty.version",
          "jcuda.version",
          "micrometer.version"
        }) {
      assertTrue(bom.containsKey(lib), "mx-bom does not pin " + lib);
      assertEquals(tested.get(lib), bom.get(lib), lib + " in mx-bom differs from the root pom");
    }
    String bomText = Files.readString(root.resolve("mx-bom/pom.xml"));
    for (String artifact :
        new String[] {
          "guava",
          "jackson-bom",
          "lettuce-core",
          "jucx",
          "bcprov-jdk18on",
          "guice",
          "slf4j-api",
          "netty-bom",
          "jcuda",
          "micrometer-core"
        }) {
      assertTrue(
          bomText.contains("<artifactId>" + artifact + "</artifactId>"),
          "mx-bom lacks " + artifact);
    }
  }
}
