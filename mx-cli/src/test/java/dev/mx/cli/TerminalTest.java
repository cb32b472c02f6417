package dev.mx.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * Progress bars draw with escape codes only on a terminal: stderr redirected to a pipe is not one,
 * stderr on a pseudo-terminal ({@code script} gives one) is.
 */
class TerminalTest {

  /** Runs the probe through {@code before} + the java command line + {@code after}. */
  private static String probe(List<String> before, List<String> after) throws Exception {
    Path java = Path.of(System.getProperty("java.home"), "bin", "java");
    String command =
        java
            + " --enable-native-access=ALL-UNNAMED -cp "
            + System.getProperty("java.class.path")
            + " "
            + Terminal.class.getName();
    List<String> cmd = new java.util.ArrayList<>(before);
    cmd.add(command);
    cmd.addAll(after);
    Process p = new ProcessBuilder(cmd).start();
    p.getOutputStream().close();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertEquals(0, p.waitFor(), out);
    return out.replace("\r", "").strip();
  }

  @Test
  void aPipeIsNotATerminalAndAPseudoTerminalIs() throws Exception {
    assertEquals("not a terminal", probe(List.of("bash", "-c"), List.of()));
    Assumptions.assumeTrue(
        Files.isExecutable(Path.of("/usr/bin/script")),
        "no /usr/bin/script (util-linux) to make a pseudo-terminal");
    // script runs the command on a new pty: its stderr is the terminal.
    String onPty = probe(List.of("script", "-qec"), List.of("/dev/null"));
    assertEquals("terminal", onPty.lines().toList().getLast(), onPty);
  }
}
