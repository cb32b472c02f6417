package dev.mx.layout.trainer;

import dev.mx.api.Box;
import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.layout.LayoutException;
import dev.mx.layout.model.ScaleTiles;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Predicate;

/**
 * A trainer rank that publishes some global weights quantized: each such weight's shards in {@code
 * float8_e4m3fn} beside the shards of its scale tensor ({@link ScaleTiles}), computed by the rank
 * from its own full-precision buffers on the weight's global tile grid, and every other tensor as
 * it holds it. Three layouts of one dtype each: the {@link #plain} aliases (into the rank's own
 * buffers), the {@link #codes} (one e4m3fn buffer per buffer holding quantized weights, at the same
 * element offsets) and the {@link #scales} (one buffer per quantized shard).
 *
 * <p>A rank can compute a shard's scales alone only when the shard does not cut a tile, so the
 * split is refused, naming the rank, the tensor and its box, where a tensor-parallel split cuts one
 * (a block grid's rows or columns, or a per-channel row's columns).
 */
public final class QuantizedShards {
  /**
   * A quantized shard: where its full-precision values are (and, in {@link
   * QuantizedShards#codes()}, its codes: the same alias), and where its scales go.
   */
  public record Pair(AliasShard source, AliasShard scales) {}

  private final TrainerRankLayout plain;
  private final TrainerRankLayout codes;
  private final TrainerRankLayout scales;
  private final List<Pair> pairs;

  private QuantizedShards(
      TrainerRankLayout plain,
      TrainerRankLayout codes,
      TrainerRankLayout scales,
      List<Pair> pairs) {
    this.plain = plain;
    this.codes = codes;
    this.scales = scales;
    this.pairs = List.copyOf(pairs);
  }

  /**
   * Splits {@code rank}: the global weights {@code quantize} accepts are published quantized with
   * scales tiled as {@code tiles}.
   *
   * @throws LayoutException naming the shard whose box cuts a tile, or a buffer holding quantized
   *     and unquantized tensors together
   */
  public static QuantizedShards split(
      TrainerRankLayout rank, Predicate<String> quantize, ScaleTiles tiles) {
    Set<String> quantizedBuffers = new LinkedHashSet<>();
    Set<String> plainBuffers = new LinkedHashSet<>();
    for (AliasShard a : rank.aliases()) {
      (quantize.test(a.hfName()) ? quantizedBuffers : plainBuffers).add(a.bufferName());
    }
    for (String b : quantizedBuffers) {
      if (plainBuffers.contains(b)) {
        throw new LayoutException(
            "trainer rank "
                + rank.label()
                + ": buffer '"
                + b
                + "' holds tensors published quantized and others published as they are");
      }
    }
    List<AliasShard> plainAliases = new ArrayList<>();
    List<AliasShard> codeAliases = new ArrayList<>();
    List<AliasShard> scaleAliases = new ArrayList<>();
    List<LocalBuffer> scaleBuffers = new ArrayList<>();
    List<Pair> pairs = new ArrayList<>();
    Map<String, Integer> shardsOf = new LinkedHashMap<>();
    for (AliasShard a : rank.aliases()) {
      if (!quantize.test(a.hfName())) {
        plainAliases.add(a);
        continue;
      }
      Box scaleBox = scaleBox(rank, a, tiles);
      String scaleName = tiles.scaleName(a.hfName());
      int index = shardsOf.merge(scaleName, 1, Integer::sum) - 1;
      String buffer = scaleName + "#" + index;
      LocalBuffer sb = new LocalBuffer(buffer, tiles.dtype(), scaleBox.shape());
      scaleBuffers.add(sb);
      AliasShard scaleAlias =
          new AliasShard(
              scaleName,
              tiles.scaleShape(a.globalShape()),
              scaleBox.lo(),
              scaleBox.shape(),
              buffer,
              0,
              a.published());
      // The codes sit at the shard's own offsets, in a one-byte buffer of the same name.
      codeAliases.add(a);
      scaleAliases.add(scaleAlias);
      pairs.add(new Pair(a, scaleAlias));
    }
    List<LocalBuffer> codeBuffers = new ArrayList<>();
    for (LocalBuffer b : rank.buffers()) {
      if (quantizedBuffers.contains(b.name())) {
        codeBuffers.add(new LocalBuffer(b.name(), DType.F8_E4M3FN, b.shape()));
      }
    }
    return new QuantizedShards(
        new TrainerRankLayout(
            rank.rank(), rank.label(), rank.dtype(), rank.buffers(), plainAliases),
        new TrainerRankLayout(rank.rank(), rank.label(), DType.F8_E4M3FN, codeBuffers, codeAliases),
        new TrainerRankLayout(rank.rank(), rank.label(), tiles.dtype(), scaleBuffers, scaleAliases),
        pairs);
  }

  private static Box scaleBox(TrainerRankLayout rank, AliasShard a, ScaleTiles tiles) {
    Shape g = a.globalShape();
    String where =
        "trainer rank " + rank.label() + " holds " + a.box() + " of '" + a.hfName() + "' " + g;
    if (g.rank() < 2) {
      throw new LayoutException(where + ": only matrices are published quantized");
    }
    int r = g.rank();
    long[] wholeDims = {tiles.tileRows(), tiles.tileCols()};
    for (int i = 0; i < 2; i++) {
      int d = r - 2 + i;
      if (wholeDims[i] == ScaleTiles.WHOLE && (a.box().lo(d) != 0 || a.box().hi(d) != g.dim(d))) {
        throw new LayoutException(
            where
                + ": its scales span every "
                + (i == 0 ? "row" : "column")
                + " of a matrix, which this shard cuts; each contiguous shard is quantized on its own,"
                + " so it must hold whole "
                + (i == 0 ? "columns" : "rows"));
      }
    }
    try {
      return tiles.scaleBox(g, a.box());
    } catch (IllegalArgumentException e) {
      throw new LayoutException(
          where
              + ": its "
              + e.getMessage()
              + " of its scales; each contiguous shard is quantized on its own"
              + (e.getMessage().startsWith("rows")
                  ? " (Megatron interleaves q, k and v by query group)"
                  : "")
              + ", so every one must start on a tile boundary: choose a smaller tile or another"
              + " split");
    }
  }

  /** What the rank publishes as it holds it, from its own buffers. */
  public TrainerRankLayout plain() {
    return plain;
  }

  /** The e4m3fn codes of the quantized shards. */
  public TrainerRankLayout codes() {
    return codes;
  }

  /** The scales of the quantized shards, one buffer each. */
  public TrainerRankLayout scales() {
    return scales;
  }

  /** Every quantized shard, in the rank's order. */
  public List<Pair> pairs() {
    return pairs;
  }
}
