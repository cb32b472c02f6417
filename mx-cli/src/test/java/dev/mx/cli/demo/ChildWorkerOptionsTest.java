package dev.mx.cli.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.mx.api.util.Settings;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The JVM options every demo child starts with: a bounded young generation, then the user's. */
class ChildWorkerOptionsTest {
  @Test
  void boundsTheYoungGenerationByDefault() {
    assertEquals(
        List.of(
            "-XX:+UseParallelGC", "-XX:MaxNewSize=64m", "--sun-misc-unsafe-memory-access=allow"),
        ChildWorker.jvmOptions(Settings.of(Map.of(), Map.of())));
  }

  @Test
  void appendsExtraOptionsFromTheEnvironmentSplitOnWhitespace() {
    assertEquals(
        List.of(
            "-XX:+UseParallelGC",
            "-XX:MaxNewSize=64m",
            "--sun-misc-unsafe-memory-access=allow",
            "-Xlog:gc",
            "-XX:MaxNewSize=1g"),
        ChildWorker.jvmOptions(
            Settings.of(
                Map.of(), Map.of("MX_DEMO_JVM_OPTIONS", "  -Xlog:gc \t -XX:MaxNewSize=1g "))));
  }

  @Test
  void theSystemPropertyWinsOverTheEnvironment() {
    assertEquals(
        List.of(
            "-XX:+UseParallelGC",
            "-XX:MaxNewSize=64m",
            "--sun-misc-unsafe-memory-access=allow",
            "-Xmx2g"),
        ChildWorker.jvmOptions(
            Settings.of(
                Map.of("mx.demo.jvmOptions", "-Xmx2g"),
                Map.of("MX_DEMO_JVM_OPTIONS", "-Xlog:gc"))));
  }

  @Test
  void aChildsLogIsQuotedWithoutTheIncubatorNoticeOnly() {
    assertEquals(
        List.of("first", "WARNING: something else"),
        ChildWorker.withoutIncubatorNotice(
            List.of(ChildWorker.INCUBATOR_NOTICE, "first", "WARNING: something else")));
  }
}
