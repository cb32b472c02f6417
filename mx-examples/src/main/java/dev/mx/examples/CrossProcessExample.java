package dev.mx.examples;

import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.transport.TransportProvider;
import dev.mx.metadata.MetadataStores;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Trainers in a child JVM, receivers in this one, meeting in a {@code file:} metadata store and
 * reading over the best transport both have ({@code ucx} here; {@code mem} cannot cross processes).
 * With {@code trainers DIR TRANSPORT} as arguments it is the trainer process itself.
 */
public final class CrossProcessExample {
  private CrossProcessExample() {}

  /** The transport the example would use: the highest-priority available one. */
  public static TransportProvider bestTransport() {
    return TransportProvider.registry().select();
  }

  /**
   * Runs trainers in a child JVM and every inference rank here; returns what each rank installed.
   */
  public static List<Map<String, float[]>> run(Path storeDir) throws Exception {
    TransportProvider best = bestTransport();
    if (best.name().equals("mem")) {
      throw new IllegalStateException(
          "no transport reaches another process here (only mem is available)");
    }
    String identity = "example-cross";
    Process trainers =
        new ProcessBuilder(
                List.of(
                    Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "--enable-native-access=ALL-UNNAMED",
                    "-cp",
                    System.getProperty("java.class.path"),
                    CrossProcessExample.class.getName(),
                    "trainers",
                    storeDir.toString(),
                    best.name()))
            .redirectError(ProcessBuilder.Redirect.INHERIT)
            .start();
    try (BufferedReader out =
            new BufferedReader(
                new InputStreamReader(trainers.getInputStream(), StandardCharsets.UTF_8));
        MetadataStore store = MetadataStores.open("file:" + storeDir)) {
      String line;
      while ((line = out.readLine()) != null && !line.equals("PUBLISHED")) {
        // Skip anything a native library prints before we are told the tables are up.
      }
      if (line == null) {
        throw new IllegalStateException("the trainer process exited before publishing");
      }
      List<Map<String, float[]>> ranks = new ArrayList<>();
      for (int r = 0; r < ExampleModel.INFERENCE_TP; r++) {
        ranks.add(Receivers.refit(best, store, identity, r));
      }
      return ranks;
    } finally {
      trainers.getOutputStream().close(); // tells the trainers to stop
      if (!trainers.waitFor(30, TimeUnit.SECONDS)) {
        trainers.destroyForcibly();
      }
    }
  }

  public static void main(String[] args) throws Exception {
    if (args.length == 3 && args[0].equals("trainers")) {
      TransportProvider transport = TransportProvider.registry().select(args[2]);
      try (MetadataStore store = MetadataStores.open("file:" + args[1]);
          Trainers trainers = new Trainers(transport, store, "example-cross")) {
        System.out.println("PUBLISHED");
        System.out.flush();
        while (System.in.read() >= 0) {
          // Serve reads until the receiver side closes our stdin.
        }
      }
      return;
    }
    Path dir = Files.createTempDirectory("mx-example-store");
    for (Map<String, float[]> rank : run(dir)) {
      rank.forEach((name, v) -> System.out.println(name + ": " + v.length + " floats"));
    }
  }
}
