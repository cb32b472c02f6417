package dev.mx.transport.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.mx.api.transport.MemoryRegistration;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import java.io.File;
import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Weights are not world-readable: owner-only files, and a receiver running as another user is
 * refused.
 */
class ShmPermissionTest {
  private static final int NOBODY = 65534;

  @BeforeEach
  void shmIsAvailable() {
    ShmTestSupport.assumeShm();
  }

  private static List<Path> filesOf(ShmTransport t) throws IOException {
    try (Stream<Path> s = Files.list(Shm.directory())) {
      return s.filter(p -> p.getFileName().toString().startsWith(t.filePrefix())).toList();
    }
  }

  @Test
  void theDirectoryAndSharedRegionsAreOwnerOnlyUnlessAGroupIsConfigured() throws Exception {
    try (ShmTransport t =
        (ShmTransport) new ShmTransportProvider().create(TransportConfig.of("p"))) {
      t.allocate(1 << 16);
      List<Path> files = filesOf(t);
      assertEquals(2, files.size(), files.toString());
      for (Path f : files) {
        assertEquals(
            "rw-------",
            PosixFilePermissions.toString(Files.getPosixFilePermissions(f)),
            f.toString());
      }
    }
    String group = Files.getAttribute(Path.of("/tmp"), "posix:group").toString();
    try (ShmTransport t =
        (ShmTransport)
            new ShmTransportProvider()
                .create(
                    new TransportConfig(
                        "p", java.time.Duration.ofSeconds(5), Map.of(ShmTransport.GROUP, group)))) {
      t.allocate(1 << 16);
      for (Path f : filesOf(t)) {
        assertEquals(
            "rw-r-----",
            PosixFilePermissions.toString(Files.getPosixFilePermissions(f)),
            f.toString());
        assertEquals(group, Files.getAttribute(f, "posix:group").toString());
      }
    }
  }

  /**
   * Copies what the probe needs (this module's and mx-api's classes, slf4j-api) where another user
   * can read it: the build's own directories may sit under a home only root can enter.
   */
  private static String readableClassPath(Path into) throws IOException {
    List<String> entries = new ArrayList<>();
    int i = 0;
    for (String e : System.getProperty("java.class.path").split(File.pathSeparator)) {
      if (!(e.contains("mx-api")
          || e.contains("mx-transport-kit")
          || e.contains("mx-transport-shm")
          || e.contains("slf4j-api"))) {
        continue;
      }
      Path from = Path.of(e);
      Path to = into.resolve("cp" + i++ + (Files.isDirectory(from) ? "" : ".jar"));
      if (Files.isDirectory(from)) {
        try (Stream<Path> walk = Files.walk(from)) {
          for (Path p : walk.toList()) {
            Path target = to.resolve(from.relativize(p).toString());
            if (Files.isDirectory(p)) {
              Files.createDirectories(target);
            } else {
              Files.copy(p, target, StandardCopyOption.REPLACE_EXISTING);
            }
          }
        }
      } else {
        Files.copy(from, to);
      }
      entries.add(to.toString());
    }
    try (Stream<Path> walk = Files.walk(into)) {
      for (Path p : walk.toList()) {
        Files.setPosixFilePermissions(
            p, PosixFilePermissions.fromString(Files.isDirectory(p) ? "rwxr-xr-x" : "rw-r--r--"));
      }
    }
    return String.join(File.pathSeparator, entries);
  }

  private static String run(List<String> cmd) throws Exception {
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(60, TimeUnit.SECONDS), "child did not exit: " + out);
    return "exit " + p.exitValue() + ": " + out;
  }

  @Test
  void aReceiverRunningAsAnotherUserIsRefusedWithAClearError() throws Exception {
    String tried;
    try {
      tried =
          run(
              List.of(
                  "setpriv", "--reuid=" + NOBODY, "--regid=" + NOBODY, "--clear-groups", "true"));
    } catch (IOException e) {
      tried = "setpriv cannot run: " + e;
    }
    String probe = tried;
    boolean canSwitch = probe.startsWith("exit 0");
    if (!canSwitch) {
      System.out.println(
          "skipping: cannot run a process as uid " + NOBODY + " (" + probe.trim() + ")");
    }
    assumeTrue(canSwitch, () -> "cannot run a process as uid " + NOBODY + ": " + probe);
    Path tmp = Files.createTempDirectory("mx-shm-perm");
    Files.setPosixFilePermissions(tmp, PosixFilePermissions.fromString("rwxr-xr-x"));
    try (Transport publisher = new ShmTransportProvider().create(TransportConfig.of("trainer-0"))) {
      MemoryRegistration r = publisher.allocate(1 << 16);
      r.segment().set(ValueLayout.JAVA_LONG, 0, 0x1122334455667788L);
      Path meta = tmp.resolve("meta.b64");
      Files.writeString(meta, Base64.getEncoder().encodeToString(publisher.localMetadata()));
      Files.setPosixFilePermissions(meta, PosixFilePermissions.fromString("rw-r--r--"));
      String cp = readableClassPath(tmp);
      String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
      String out =
          run(
              List.of(
                  "setpriv",
                  "--reuid=" + NOBODY,
                  "--regid=" + NOBODY,
                  "--clear-groups",
                  java,
                  "--enable-native-access=ALL-UNNAMED",
                  "-Xmx64m",
                  "-cp",
                  cp,
                  ShmConnectProbe.class.getName(),
                  meta.toString(),
                  "trainer-0"));
      assertTrue(
          out.contains("refused:")
              && out.contains("may not open peer 'trainer-0'")
              && out.contains("rw-------"),
          out);
    } finally {
      try (Stream<Path> walk = Files.walk(tmp)) {
        for (Path p : walk.sorted(java.util.Comparator.reverseOrder()).toList()) {
          Files.deleteIfExists(p);
        }
      }
    }
  }
}
