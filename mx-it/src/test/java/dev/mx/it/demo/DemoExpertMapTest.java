package dev.mx.it.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.mx.layout.model.ModelArchitecture;
import dev.mx.layout.model.ModelConfigs;
import dev.mx.layout.vllm.ExpertPlacement;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code mx demo --expert-map} (EPLB) on the bundled MoE model: every physical slot of the dump
 * holds its logical expert from the generator, and each receiver's wire bytes are those of the
 * logical experts it needs, each read once however many of its slots it fills.
 */
class DemoExpertMapTest {
  private static final String MODEL = "tiny-qwen3-moe";
  private static final ModelArchitecture ARCH = ModelConfigs.load(MODEL);

  /**
   * Layers 1..3 are MoE; rank 0 of ep=2 holds expert 0 twice in layer 1, rank 1 expert 1 thrice.
   */
  private static final String PERMUTED =
      "{\"1\": [0, 0, 1, 2, 3, 4, 5, 6, 7, 7], \"2\": [7, 6, 5, 4, 3, 2, 1, 0, 1, 1],"
          + " \"3\": [0, 1, 2, 3, 4, 5, 6, 7, 0, 1]}";

  @Test
  void aPermutedMapWithSharedSlotsInstallsEverySlotFromItsLogicalExpertReadOnce(@TempDir Path dir)
      throws Exception {
    Path map = dir.resolve("map.json");
    Files.writeString(map, PERMUTED);
    checkAgainstIdentity(dir, "tp=2,ep=2", map.toString(), ExpertPlacement.parse(PERMUTED, ARCH));
  }

  @Test
  void redundantSlotsUnderExpertSlicingReadNoExpertTwice(@TempDir Path dir) throws Exception {
    checkAgainstIdentity(dir, "tp=2,ep=1", "redundant=2", ExpertPlacement.redundant(ARCH, 2));
  }

  @Test
  void redundantSlotsSplitOverExpertParallelRanks(@TempDir Path dir) throws Exception {
    checkAgainstIdentity(dir, "tp=2,ep=2", "redundant=2", ExpertPlacement.redundant(ARCH, 2));
  }

  @Test
  void badMapsExitTwoNamingTheOptionLayerAndSlot(@TempDir Path dir) throws Exception {
    Path outside = dir.resolve("outside.json");
    Files.writeString(outside, "{\"1\": [0, 1], \"2\": [0, 8], \"3\": [0, 1]}");
    assertUsage(
        "--expert-map '" + outside + "': layer 2 slot 1: 8 is not a logical expert in [0, 8)",
        "--expert-map",
        outside.toString());
    Path missing = dir.resolve("missing.json");
    Files.writeString(missing, "{\"1\": [0, 1], \"3\": [0, 1]}");
    assertUsage(
        "--expert-map '" + missing + "': layer 2 is missing", "--expert-map", missing.toString());
    Path malformed = dir.resolve("malformed.json");
    Files.writeString(malformed, "{\"1\": [0, 1");
    assertUsage(
        "--expert-map '" + malformed + "': malformed JSON", "--expert-map", malformed.toString());
    assertUsage(
        "--expert-map 'redundant=1': layer 1: 9 physical slots do not split over ep 2",
        "--expert-map",
        "redundant=1");
    assertUsage(
        "--expert-map 'redundant=x': redundant=N needs an integer N",
        "--expert-map",
        "redundant=x");
    assertUsage(
        "--expert-map '" + dir.resolve("absent.json") + "': cannot read the expert map file",
        "--expert-map",
        dir.resolve("absent.json").toString());
    DemoRun dense = DemoRun.run("--model", "tiny-llama", "--expert-map", "redundant=1");
    assertEquals(2, dense.code(), dense.toString());
    assertTrue(
        dense
            .err()
            .contains("--expert-map 'redundant=1': model tiny-llama has no mixture-of-experts"),
        dense.err());
  }

  /**
   * Runs the demo without and with {@code expertMap}; the remapped dump must match the generator
   * slot by slot, and each rank's wire bytes must differ from the identity run's by exactly the
   * bytes of the logical experts it needs more (or fewer) than its identity experts.
   */
  private static void checkAgainstIdentity(
      Path dir, String inference, String expertMap, ExpertPlacement placement) throws Exception {
    int tp = Integer.parseInt(inference.replaceAll("tp=(\\d+),.*", "$1"));
    int ep = Integer.parseInt(inference.replaceAll(".*ep=(\\d+)", "$1"));
    List<Long> identity = wireBytes(run(dir.resolve("identity"), inference));
    Path dump = dir.resolve("remapped");
    JsonNode remapped = run(dump, inference, "--expert-map", expertMap);
    DemoRun.assertDumpMatchesGenerator(
        dump, "receiver-", MODEL, tp, ep, "bf16", "bf16", 1, placement);
    long expertBytes = 3L * ARCH.moeIntermediateSize() * ARCH.hiddenSize() * 2; // bf16
    List<Long> expected = new ArrayList<>();
    for (int r = 0; r < tp; r++) {
      long extra = 0;
      for (int layer : placement.layers()) {
        int slots = placement.slotCount(layer);
        int local = ep > 1 ? slots / ep : slots;
        Set<Integer> logical = new HashSet<>();
        for (int s = 0; s < local; s++) {
          logical.add(placement.logical(layer, (ep > 1 ? r * local : 0) + s));
        }
        int identityLocal = ep > 1 ? ARCH.numExperts() / ep : ARCH.numExperts();
        extra += (logical.size() - identityLocal) * expertBytes;
      }
      expected.add(identity.get(r) + extra);
    }
    assertEquals(expected, wireBytes(remapped), "wire bytes per rank, identity " + identity);
  }

  private static JsonNode run(Path dump, String inference, String... extra) throws Exception {
    List<String> args =
        new ArrayList<>(
            List.of(
                "--model",
                MODEL,
                "--in-process",
                "--trainer",
                "tp=2",
                "--inference",
                inference,
                "--steps",
                "2",
                "--json",
                "--dump",
                dump.toString()));
    args.addAll(List.of(extra));
    DemoRun run = DemoRun.run(args.toArray(String[]::new));
    assertEquals(0, run.code(), run.toString());
    return run.json();
  }

  /** Wire bytes of the last step, by receiver rank. */
  private static List<Long> wireBytes(JsonNode report) {
    List<Long> out = new ArrayList<>();
    for (JsonNode s : report.get("steps")) {
      if (s.get("step").asLong() == 1) {
        int rank = s.get("rank").asInt();
        while (out.size() <= rank) {
          out.add(-1L);
        }
        out.set(rank, s.get("bytes").asLong());
      }
    }
    return out;
  }

  private static void assertUsage(String expected, String... extra) {
    List<String> args =
        new ArrayList<>(List.of("--model", MODEL, "--in-process", "--inference", "tp=2,ep=2"));
    args.addAll(List.of(extra));
    DemoRun run = DemoRun.run(args.toArray(String[]::new));
    assertEquals(2, run.code(), run.toString());
    assertTrue(run.err().contains(expected), "expected '" + expected + "' in:\n" + run.err());
  }
}
