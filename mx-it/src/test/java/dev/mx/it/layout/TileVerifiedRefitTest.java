package dev.mx.it.layout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.api.digest.TileDigests;
import dev.mx.api.error.DigestMismatchException;
import dev.mx.api.plan.Shard;
import dev.mx.api.plan.SourceInfo;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.digest.CpuDigestProvider;
import dev.mx.layout.model.ModelArchitecture;
import dev.mx.layout.model.ModelConfigs;
import dev.mx.layout.trainer.TrainerTopology;
import dev.mx.layout.vllm.InferenceTopology;
import dev.mx.layout.vllm.VllmLayout;
import dev.mx.layout.vllm.VllmReference;
import dev.mx.refit.DiscoveredSources;
import dev.mx.refit.Receiver;
import dev.mx.refit.ReceiverConfig;
import dev.mx.refit.VerifyMode;
import dev.mx.refit.publish.TileLayout;
import dev.mx.transport.mem.MemTransportProvider;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The default verification over tile digests, end to end on real layouts: a receiver reading
 * trainer shards in part verifies them tile by tile — no installed byte unverified, at most a few
 * boundary tiles pulled beyond what it needs — and a corrupted byte in a tile held whole or in a
 * staged boundary tile fails the refit naming the shard and tile, nothing installed.
 */
class TileVerifiedRefitTest {
  /** Small enough that the tiny models' shards span many tiles. */
  private static final long TILE = 256;

  /**
   * Not a power of two, so a half shard ends inside a tile: the corruption cases need a boundary
   * tile.
   */
  private static final long ODD_TILE = 384;

  /** One refit of every inference rank; returns each rank's metrics. */
  private static List<Map<String, Object>> refit(
      String model,
      TrainerTopology trainer,
      InferenceTopology inference,
      long tile,
      java.util.function.Consumer<TrainerCluster> corrupt) {
    return refit(model, trainer, inference, tile, corrupt, VerifyMode.ALL);
  }

  private static List<Map<String, Object>> refit(
      String model,
      TrainerTopology trainer,
      InferenceTopology inference,
      long tile,
      java.util.function.Consumer<TrainerCluster> corrupt,
      VerifyMode verify) {
    return refit(model, trainer, inference, new TileLayout(tile, 1), corrupt, verify);
  }

  /** As above, with the tile digests a publisher of {@code tiles} lists. */
  private static List<Map<String, Object>> refit(
      String model,
      TrainerTopology trainer,
      InferenceTopology inference,
      TileLayout tiles,
      java.util.function.Consumer<TrainerCluster> corrupt,
      VerifyMode verify) {
    ModelArchitecture arch = ModelConfigs.load(model);
    CpuDigestProvider digests = new CpuDigestProvider();
    List<Map<String, Object>> out = new ArrayList<>();
    try (TrainerCluster trainers = new TrainerCluster(trainer.layout(arch, DType.BF16))) {
      trainers.fill(0);
      Map<String, SourceInfo> sources = trainers.sources(digests, tiles);
      corrupt.accept(trainers);
      for (int r = 0; r < inference.tp(); r++) {
        LayoutRefitEndToEndTest.CheckingInstaller installer =
            new LayoutRefitEndToEndTest.CheckingInstaller(
                new VllmReference(arch, inference, r), DType.BF16, DType.BF16);
        try (Transport t = new MemTransportProvider().create(TransportConfig.of("receiver-" + r));
            Receiver receiver =
                Receiver.builder()
                    .config(ReceiverConfig.defaults().withVerify(verify).withRank(r).withThreads(2))
                    .transport(t)
                    .discovery(timeout -> new DiscoveredSources(sources, trainers.peerMetadata()))
                    .geometry(new VllmLayout(arch, inference, r, DType.BF16))
                    .installer(installer)
                    .digests(digests)
                    .build()) {
          try {
            Map<String, Object> m = receiver.updateWeights(0);
            assertEquals(List.of(), installer.mismatches, model + " rank " + r);
            out.add(m);
          } finally {
            if (installer.lastStep < 0) {
              out.add(Map.of("installed", false));
            }
          }
        }
      }
    }
    return out;
  }

  /**
   * Every byte verified, and at most 10 % more bytes pulled than an unverified refit of the same
   * step pulls.
   */
  private static void assertTileVerified(
      String what, List<Map<String, Object>> ranks, List<Map<String, Object>> off) {
    for (int r = 0; r < ranks.size(); r++) {
      Map<String, Object> m = ranks.get(r);
      assertEquals(0L, m.get("unverifiable_shards"), what + " rank " + r + ": " + m);
      assertEquals(
          0L, m.get("unverified_bytes"), what + " rank " + r + ": every installed byte verified");
      long needed = (Long) off.get(r).get("bytes_received");
      long extra = (Long) m.get("bytes_received") - needed;
      assertTrue(
          extra >= 0 && extra <= 0.10 * needed,
          what + " rank " + r + ": extra wire bytes " + extra + " of " + needed + ": " + m);
    }
  }

  @Test
  void trainerTp2ToInferenceTp4VerifiesEveryByteByTileWithinTenPercentExtraBytes() {
    List<Map<String, Object>> ranks =
        refit(
            "tiny-llama",
            new TrainerTopology.Megatron(2, 1, 1),
            InferenceTopology.tp(4),
            TILE,
            t -> {});
    assertTileVerified(
        "tp2->tp4",
        ranks,
        refit(
            "tiny-llama",
            new TrainerTopology.Megatron(2, 1, 1),
            InferenceTopology.tp(4),
            TILE,
            t -> {},
            VerifyMode.OFF));
    // Without tile digests the same refit stages every half-read shard whole: the old cost, for
    // comparison.
    List<Map<String, Object>> whole =
        refit(
            "tiny-llama",
            new TrainerTopology.Megatron(2, 1, 1),
            InferenceTopology.tp(4),
            0,
            t -> {});
    assertTrue(
        (Long) whole.get(0).get("bytes_received") > (Long) ranks.get(0).get("bytes_received"),
        whole.get(0) + " vs " + ranks.get(0));
  }

  @Test
  void theDemoTopologyTp4ToTp2VerifiesEveryByteByTileWithinTenPercentExtraBytes() {
    assertTileVerified(
        "tp4->tp2",
        refit(
            "tiny-llama",
            new TrainerTopology.Megatron(4, 1, 1),
            InferenceTopology.tp(2),
            TILE,
            t -> {}),
        refit(
            "tiny-llama",
            new TrainerTopology.Megatron(4, 1, 1),
            InferenceTopology.tp(2),
            TILE,
            t -> {},
            VerifyMode.OFF));
  }

  @Test
  void aCorruptedByteInAWholeHeldTileOrInABoundaryTileFailsNamingShardAndTile() {
    // TP2 -> TP4: inference rank 0 reads the first half of each of trainer 0's dim-0 shards. In a
    // shard of
    // several tiles, the tile at its start is held whole; the tile holding its middle byte is a
    // boundary tile
    // unless the half ends on a tile edge.
    for (boolean boundary : new boolean[] {false, true}) {
      Shard[] victim = new Shard[1];
      long[] at = new long[1];
      DigestMismatchException e =
          assertThrows(
              DigestMismatchException.class,
              () ->
                  refit(
                      "tiny-llama",
                      new TrainerTopology.Megatron(2, 1, 1),
                      InferenceTopology.tp(4),
                      ODD_TILE,
                      trainers -> {
                        Shard s = halfReadShard(trainers, boundary);
                        victim[0] = s;
                        at[0] = boundary ? s.byteSize() / 2 - 1 : 3;
                        MemorySegment bytes = trainers.bytesOf(s);
                        bytes.set(
                            ValueLayout.JAVA_BYTE,
                            at[0],
                            (byte) (bytes.get(ValueLayout.JAVA_BYTE, at[0]) ^ 0x40));
                      }),
              "boundary=" + boundary);
      long tile = at[0] / ODD_TILE;
      assertEquals(victim[0].session(), e.publisher(), e.getMessage());
      assertTrue(
          e.getMessage().contains("tile " + tile + " (shard bytes [" + tile * ODD_TILE + ", "),
          e.getMessage());
    }
  }

  /**
   * A one-layer Llama whose down_proj rows are wide enough (8 KiB at TP 2) that the planner reads
   * their halves exactly instead of staging the shards for their many small segments.
   */
  private static String wideLlama(Path dir) throws IOException {
    Path config = dir.resolve("wide-llama.json");
    Files.writeString(
        config,
        """
        {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 1024,
         "intermediate_size": 8192, "num_attention_heads": 8, "num_key_value_heads": 2,
         "num_hidden_layers": 1, "vocab_size": 256, "tie_word_embeddings": false,
         "attention_bias": false, "torch_dtype": "bfloat16"}
        """);
    return config.toString();
  }

  /** Tiles of 16 KiB (two down_proj rows), column tiles of 4 blocks per row. */
  private static final TileLayout COLUMNS = new TileLayout(16384, 4);

  @Test
  void columnTilesVerifyRowParallelWeightsReadAtTwiceTheTensorParallelismWithoutAnExtraByte(
      @TempDir Path dir) throws IOException {
    String model = wideLlama(dir);
    TrainerTopology trainer = new TrainerTopology.Megatron(2, 1, 1);
    List<Map<String, Object>> ranks =
        refit(model, trainer, InferenceTopology.tp(4), COLUMNS, t -> {}, VerifyMode.ALL);
    List<Map<String, Object>> off =
        refit(model, trainer, InferenceTopology.tp(4), COLUMNS, t -> {}, VerifyMode.OFF);
    List<Map<String, Object>> byteTiles =
        refit(model, trainer, InferenceTopology.tp(4), COLUMNS.tileBytes(), t -> {});
    for (int r = 0; r < ranks.size(); r++) {
      Map<String, Object> m = ranks.get(r);
      assertEquals(0L, m.get("unverified_bytes"), "rank " + r + ": " + m);
      // Each half row of down_proj is two whole column blocks: every tile held whole,
      // nothing staged, exactly the bytes an unverified refit pulls.
      assertEquals(off.get(r).get("bytes_received"), m.get("bytes_received"), "rank " + r);
      assertEquals(off.get(r).get("staged_shards"), m.get("staged_shards"), "rank " + r + ": " + m);
      assertTrue(
          (Long) byteTiles.get(r).get("bytes_received") > (Long) m.get("bytes_received"),
          "byte tiles stage the half-read shards whole: " + byteTiles.get(r) + " vs " + m);
    }
  }

  @Test
  void aCorruptedByteInAColumnTileFailsNamingItsRowsAndColumns(@TempDir Path dir)
      throws IOException {
    String model = wideLlama(dir);
    TileLayout columns = COLUMNS;
    Shard[] victim = new Shard[1];
    DigestMismatchException e =
        assertThrows(
            DigestMismatchException.class,
            () ->
                refit(
                    model,
                    new TrainerTopology.Megatron(2, 1, 1),
                    InferenceTopology.tp(4),
                    columns,
                    trainers -> {
                      Shard s = columnTiledShard(trainers, columns);
                      victim[0] = s;
                      MemorySegment bytes = trainers.bytesOf(s);
                      // Row 20, byte 3: column block 0 (bytes [0, 2048) of 8 KiB rows).
                      long at = 20 * s.tiles().rowBytes() + 3;
                      bytes.set(
                          ValueLayout.JAVA_BYTE,
                          at,
                          (byte) (bytes.get(ValueLayout.JAVA_BYTE, at) ^ 0x40));
                    },
                    VerifyMode.ALL));
    TileDigests t = victim[0].tiles();
    long rowsPerTile = columns.tileBytes() / t.columnBytes();
    long first = 20 / rowsPerTile * rowsPerTile;
    assertEquals(victim[0].session(), e.publisher(), e.getMessage());
    assertTrue(
        e.getMessage().contains("(rows [" + first + ", " + (first + rowsPerTile) + ")"),
        e.getMessage());
    assertTrue(e.getMessage().contains("row bytes [0, " + t.columnBytes() + ")"), e.getMessage());
  }

  /** The down_proj shard of trainer 0: split along its columns, so column-tiled. */
  private static Shard columnTiledShard(TrainerCluster trainers, TileLayout tiles) {
    return trainer0Shard(
        trainers, tiles, "layers.0.mlp.down_proj", s -> s.tiles() != null && s.tiles().byColumns());
  }

  /**
   * A q_proj shard of trainer 0 spanning several tiles, whose half (what inference rank 0 reads)
   * ends inside a tile ({@code boundary}) — or any such shard when not.
   */
  private static Shard halfReadShard(TrainerCluster trainers, boolean boundary) {
    return trainer0Shard(
        trainers,
        new TileLayout(ODD_TILE, 1),
        "q_proj",
        s ->
            s.tiles() != null
                && s.tiles().digests().size() >= 4
                && (!boundary || (s.byteSize() / 2) % ODD_TILE != 0));
  }

  /** The first shard of trainer 0 of a tensor named with {@code fragment} that {@code wanted}. */
  private static Shard trainer0Shard(
      TrainerCluster trainers,
      TileLayout tiles,
      String fragment,
      java.util.function.Predicate<Shard> wanted) {
    for (Map.Entry<String, SourceInfo> e :
        trainers.sources(new CpuDigestProvider(), tiles).entrySet()) {
      if (e.getKey().contains(fragment)) {
        for (Shard s : e.getValue().shards()) {
          if (s.session().equals("trainer-0") && wanted.test(s)) {
            return s;
          }
        }
      }
    }
    throw new IllegalStateException(
        "trainer-0 lists no " + fragment + " shard as wanted under " + tiles);
  }
}
