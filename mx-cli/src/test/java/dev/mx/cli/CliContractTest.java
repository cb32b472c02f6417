package dev.mx.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.mx.testing.Eventually;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The launcher contract of ARCHITECTURE §5.1 as the issue spells it out: every bad option value
 * exits 2 with one line naming the option and "try --help" (never the usage, never a stack trace),
 * JSON documents stay pure, errors go to stderr. Bad values run through the picocli entry point in
 * this JVM; the rest run {@code dev.mx.cli.Main} as a real process.
 */
class CliContractTest {

  @TempDir Path dir;

  @ParameterizedTest(name = "mx {0}")
  @CsvSource(
      delimiter = '|',
      value = {
        "publish --rank 7 --metadata file:/tmp/mx-none      | mx publish  | --rank 7 is out of range: must be from 0 to 3",
        "publish --rank -1 --metadata file:/tmp/mx-none     | mx publish  | --rank -1 is out of range",
        "publish --rank 0 --trainer tp=2,tp=4 --metadata file:/tmp/mx-none | mx publish | tp is given twice",
        "receive --rank 2 --metadata file:/tmp/mx-none      | mx receive  | --rank 2 is out of range: must be from 0 to 1",
        "receive --rank 0 --metadata file:/tmp/mx-none --heartbeat 0 | mx receive | --heartbeat 0 is out of range",
        "demo --trainer=                                    | mx demo     | --trainer must not be empty",
        "demo --trainer tp=x                                | mx demo     | tp must be a whole number",
        "demo --trainer tp=4,fsdp=2                         | mx demo     | fsdp=N cannot be combined",
        "demo --trainer tp=3                                | mx demo     | not divisible by tp 3",
        "demo --trainer tp=64,pp=64,ep=2                    | mx demo     | exceed the limit of 4096",
        "demo --inference tp=2,ep=3                         | mx demo     | ep must be 1 or equal to tp",
        "demo --inference tp=2,tp=2                         | mx demo     | tp is given twice",
        "demo --trainer-dtype int7                          | mx demo     | --trainer-dtype 'int7': must be one of bf16, f16, f32",
        "demo --inference-dtype i32                         | mx demo     | --inference-dtype 'i32': must be one of bf16, f16, f32",
        "demo --model no-such-model                         | mx demo     | --model 'no-such-model': unknown model",
        "demo --timeout 1e300                               | mx demo     | --timeout 1e300 is out of range",
        "demo --timeout -1                                  | mx demo     | --timeout -1 is out of range",
        "demo --timeout NaN                                 | mx demo     | --timeout NaN is out of range",
        "demo --steps 0                                     | mx demo     | --steps 0 is out of range",
        "demo --timeout 99999999                            | mx demo     | --timeout 99999999 is out of range: must be more than 0 and at most 1000000 seconds",
        "demo --timeout 99999999999999999999999999          | mx demo     | --timeout 99999999999999999999999999 is out of range",
        "demo --trainer tp=99999999999                      | mx demo     | tp 99999999999 is above the limit of 2147483647",
        "demo --inference tp=2,ep=99999999999               | mx demo     | ep 99999999999 is above the limit of 2147483647",
        "demo --steps 99999999999                           | mx demo     | --steps",
        "demo --transport bogus                             | mx demo     | --transport 'bogus': must be auto or one of",
        "demo --staging-bytes 8388607t                      | mx demo     | --staging-bytes 8388607t (9223370937343148032 bytes) is more than this host's memory (",
        "demo --staging-bytes 9223372036854775807           | mx demo     | --staging-bytes 9223372036854775807 (9223372036854775807 bytes) is more than this host's memory",
        "demo --wire sideways                               | mx demo     | --wire must be fused or phased",
        "demo --fault sideways                              | mx demo     | --fault must be corrupt, kill-publisher, kill-publisher-mid-read, stall-publisher or trainer-topology, got 'sideways'",
        "demo --fault kill-publisher-mid-read --install copy | mx demo    | --fault kill-publisher-mid-read needs --install in-place, got --install copy",
        "demo --no-such-option                              | mx demo     | Unknown option: '--no-such-option'",
        "nosuchcommand                                      | mx          | Unmatched argument",
        "publish --rank 0 --metadata file:/tmp/mx-none --steps 0 | mx publish | --steps 0 is out of range: must be from 1 to 1000000",
        "publish --rank 0 --metadata file:/tmp/mx-none --steps -1 | mx publish | --steps -1 is out of range",
        "publish --rank 0 --metadata file:/tmp/mx-none --interval -1 | mx publish | --interval -1 is out of range",
        "publish --rank 0 --metadata file:/tmp/mx-none --interval NaN | mx publish | --interval NaN is out of range",
        "demo --metadata ftp://x                            | mx demo     | --metadata: no metadata store for scheme 'ftp'; known schemes: file, memory, mx, redis",
        "publish --rank 0 --metadata ftp://x                | mx publish  | --metadata: no metadata store for scheme 'ftp'",
        "demo --metadata /tmp/store                         | mx demo     | --metadata has no scheme: expected file:DIR or redis://host:port",
        "bench scale --control-plane etcd                   | mx bench    | --control-plane 'etcd' is neither redis nor mx",
        "receive --rank 0 --metadata file:/tmp/mx-none --version-id uid-1 | mx receive | --version-id names a weight version to install: add --follow",
        "receive --rank 0 --metadata file:/tmp/mx-none --follow --version-id= | mx receive | --version-id: the id is empty",
        "receive --rank 0 --metadata memory:x               | mx receive  | --metadata memory: a memory store lives in one JVM and cannot be shared between processes; use file:DIR or redis://host:port (try",
      })
  void aBadOptionValueExitsTwoWithOneLineNamingIt(String args, String command, String message) {
    CliProcess.assertBadUsage(CliProcess.inProcess(args.split(" ")), command, message);
  }

  @Test
  void mxAloneExitsTwoWithTheUsageOnStderr() {
    CliProcess.Run r = CliProcess.inProcess();
    assertEquals(2, r.code());
    assertTrue(r.err().contains("Usage: mx"), r.err());
    assertEquals("", r.out());
  }

  @Test
  void aUsageErrorUnderJsonIsAlsoAJsonDocumentOnStdout() throws Exception {
    CliProcess.Run r = CliProcess.inProcess("demo", "--json", "--steps", "0");
    assertEquals(2, r.code());
    JsonNode doc = Json.mapper().readTree(r.out());
    assertEquals(List.of("ok", "error"), names(doc));
    assertFalse(doc.get("ok").asBoolean());
    assertTrue(doc.get("error").asText().startsWith("--steps 0 is out of range"), doc.toString());
  }

  @Test
  void dumpIntoAFileSaysItIsAFile() throws Exception {
    Path file = Files.writeString(dir.resolve("taken"), "x");
    CliProcess.Run r = CliProcess.inProcess("demo", "--dump", file.toString());
    assertEquals(2, r.code());
    assertTrue(r.err().contains("--dump '" + file + "': is a file, not a directory"), r.err());
  }

  @Test
  void fileErrorsSayWhy() {
    assertEquals(
        "read-only file system",
        IoErrors.reason(
            new FileSystemException("/ro/dump", null, "Read-only file system"),
            Path.of("/ro/dump")));
    assertEquals(
        "/ro/dump/x: read-only file system",
        IoErrors.reason(
            new FileSystemException("/ro/dump/x", null, "Read-only file system"),
            Path.of("/ro/dump")));
    assertEquals(
        "exists and is a file",
        IoErrors.reason(new java.nio.file.FileAlreadyExistsException("/d"), "/d"));
  }

  @Test
  void publishHelpListsOnlyTheOptionsATrainerUses() {
    CliProcess.Run r = CliProcess.inProcess("publish", "--help");
    assertEquals(0, r.code(), r.err());
    for (String receiverOnly : Usage.RECEIVER_ONLY) {
      assertFalse(r.out().contains(receiverOnly + "="), receiverOnly + " in:\n" + r.out());
    }
    assertTrue(r.out().contains("--trainer-dtype=") && r.out().contains("--rank="), r.out());
    // Valid values are listed.
    assertTrue(r.out().contains("bf16, f16, f32"), r.out());
    assertTrue(r.out().contains("auto, ") && r.out().contains("mem"), r.out());
    assertTrue(r.out().replaceAll("\\s+", " ").contains("llama-3.2-1b, qwen2.5-0.5b"), r.out());
  }

  @Test
  void jsonStaysPureWhenNativeCodeWritesToStdout() throws Exception {
    // The JVM's own class-load log is native code writing to file descriptor 1, like UCX's logs.
    Process p =
        CliProcess.start(dir, List.of("-Xlog:class+load=info:stdout"), "transports", "--json");
    CliProcess.Run r = CliProcess.finish(dir, p, "transports", "--json");
    assertEquals(0, r.code(), r.err());
    // Classes loaded before main ran cannot be diverted; everything after is on stderr.
    assertFalse(r.out().contains("dev.mx.cli.TransportsCommand"), "native log on stdout");
    assertTrue(r.err().contains("dev.mx.cli.TransportsCommand"), "native log lost");
    String json =
        r.out()
            .lines()
            .filter(l -> !l.matches("^\\[\\d+\\.\\d+s\\].*"))
            .reduce("", (a, b) -> a + b + "\n");
    assertTrue(Json.mapper().readTree(json).isArray(), json);
  }

  @Test
  void receiveNamesItselfReportsErrorsOnStderrAndKeepsItsJsonKeyOrder() throws Exception {
    Files.createDirectories(dir.resolve("empty-store"));
    String[] args = {
      "receive",
      "--rank",
      "0",
      "--metadata",
      "file:" + dir.resolve("empty-store"),
      "--timeout",
      "1",
      "--model",
      "tiny-llama"
    };
    CliProcess.Run text = CliProcess.run(dir, null, args);
    assertEquals(1, text.code(), text.err());
    assertTrue(text.out().startsWith("mx receive: tiny-llama"), text.out());
    assertFalse(
        text.out().contains("memory-copy baseline"), "baseline measured unasked:\n" + text.out());
    assertTrue(text.err().lines().anyMatch(l -> l.startsWith("mx receive: error: ")), text.err());

    List<String> withJson = new ArrayList<>(List.of(args));
    withJson.add("--json");
    CliProcess.Run json = CliProcess.run(dir, null, withJson.toArray(String[]::new));
    assertEquals(1, json.code(), json.err());
    JsonNode doc = Json.mapper().readTree(json.out());
    assertEquals(
        List.of("ok", "error", "run", "baseline_gbps", "steps", "unverified_bytes"), names(doc));
    assertEquals(
        List.of(
            "model",
            "trainer",
            "inference",
            "trainer_dtype",
            "inference_dtype",
            "transport",
            "wire",
            "verify",
            "last_step"),
        names(doc.get("run")));
    assertTrue(doc.get("baseline_gbps").isNull());
  }

  @Test
  void theDemoProgressBarReachesAHundredPercent() throws Exception {
    CliProcess.Run r =
        CliProcess.run(dir, null, "demo", "--in-process", "--model", "tiny-llama", "--steps", "2");
    assertEquals(0, r.code(), r.err());
    assertTrue(r.err().contains("[####################] step 2/2: done"), r.err());
  }

  @Test
  void sigtermOnTheDemoCleansUpWithoutAStackTrace() throws Exception {
    Path tmp = Files.createDirectories(dir.resolve("tmp"));
    Process p =
        CliProcess.start(
            dir,
            List.of("-Djava.io.tmpdir=" + tmp),
            "demo",
            "--model",
            "tiny-llama",
            "--steps",
            "100000");
    // The event: the demo said it is starting and its first worker JVM is running.
    List<ProcessHandle> workers =
        Eventually.await(
            Eventually.PROCESS_START,
            "the demo to say it is starting and to launch a worker JVM",
            () -> {
              assertTrue(p.isAlive(), "the demo ended before it was signalled");
              List<ProcessHandle> children = p.children().toList();
              return children.isEmpty() || !stderrOf(dir).contains("starting") ? null : children;
            });
    try (Stream<Path> during = Files.list(tmp)) {
      assertTrue(
          during.anyMatch(f -> f.getFileName().toString().startsWith("mx-demo-")),
          "no temp folder to clean");
    }
    // SIGTERM by pid (Process.destroy would also close the pipes we read).
    assertEquals(0, new ProcessBuilder("kill", "-TERM", Long.toString(p.pid())).start().waitFor());
    CliProcess.Run r = CliProcess.finish(dir, p, "demo");
    assertEquals(143, r.code(), r.err());
    assertTrue(r.err().contains("mx demo: stopped by a signal"), r.err());
    assertFalse(r.err().contains("Exception") || r.err().contains("\tat "), r.err());
    try (Stream<Path> after = Files.list(tmp)) {
      assertEquals(
          List.of(), after.filter(f -> f.getFileName().toString().startsWith("mx-demo-")).toList());
    }
    Eventually.await(
        Eventually.PROCESS_START,
        "the demo's worker JVMs " + workers + " to be gone",
        () -> workers.stream().noneMatch(ProcessHandle::isAlive));
  }

  private static String stderrOf(Path dir) {
    try {
      return Files.readString(dir.resolve("stderr.txt"));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static List<String> names(JsonNode node) {
    List<String> out = new ArrayList<>();
    for (Iterator<String> it = node.fieldNames(); it.hasNext(); ) {
      out.add(it.next());
    }
    return out;
  }

  /**
   * An unreachable --metadata redis:// fails before the copy baseline and any table, naming host
   * and port, within the store's connect timeout (a port nothing listens on refuses at once).
   */
  @Test
  void anUnreachableStoreFailsFirstNamingHostAndPort() throws Exception {
    int dead;
    try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
      dead = s.getLocalPort();
    }
    CliProcess.Run r =
        CliProcess.inProcess("demo", "--metadata", "redis://127.0.0.1:" + dead, "--json");
    assertEquals(1, r.code(), r.err());
    assertTrue(
        r.err().contains("redis://127.0.0.1:" + dead + ": cannot connect to Redis"), r.err());
    assertFalse(r.err().contains("memory-copy baseline"), "measured before the store: " + r.err());
    JsonNode doc = Json.mapper().readTree(r.out());
    assertFalse(doc.get("ok").asBoolean(), r.out());
  }
}
