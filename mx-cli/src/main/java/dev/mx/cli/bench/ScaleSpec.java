package dev.mx.cli.bench;

/**
 * What {@code mx bench scale} simulates: a model, the trainer and inference topologies of the full
 * run, how many control-plane steps to measure per rank count, and the fabric of the what-if model.
 *
 * @param model a bundled model name or a {@code config.json} path
 * @param trainer the trainer topology, e.g. {@code tp=4,pp=1,ep=64}
 * @param inference the inference topology, e.g. {@code tp=8,ep=128}
 * @param steps measured control-plane steps per rank count (after one warm-up step)
 * @param fabricGbps per-GPU link rate of the modelled fabric, in Gb/s
 * @param fractions the rank fractions to run besides the full topology, as divisors (8 = 1/8)
 * @param controlPlane where the participants' version protocol goes: {@value #REDIS} (one {@code
 *     redis-server} holding every shard table) or {@value #MX} (a RefitService server holding shard
 *     records, each trainer rank serving its own table)
 */
public record ScaleSpec(
    String model,
    String trainer,
    String inference,
    int steps,
    double fabricGbps,
    java.util.List<Integer> fractions,
    String controlPlane) {

  public static final String REDIS = "redis";

  public static final String MX = "mx";

  /**
   * Kimi-K2 from 256 Megatron ranks to 128 vLLM ranks, as Perplexity's 256 → 128 anchor. Trainer
   * tp=2 × ep=128, pp=1: expert-heavy as DeepSeek-V3's own training (TP 1, EP 64), 3 of the 384
   * experts per layer on each rank; ep=256 does not divide 384 experts, and 61 layers (prime) have
   * no even pipeline split. Inference tp=8 × 16 data-parallel groups, all 128 ranks one
   * expert-parallel group (3 experts each): vLLM's wide-EP deployment of DeepSeek-class models.
   */
  public static final ScaleSpec DEFAULT =
      new ScaleSpec(
          "kimi-k2", "tp=2,pp=1,ep=128", "tp=8,ep=128", 1, 400, java.util.List.of(8, 4, 2), REDIS);

  public ScaleSpec {
    fractions = java.util.List.copyOf(fractions);
    if (!REDIS.equals(controlPlane) && !MX.equals(controlPlane)) {
      throw new IllegalArgumentException(
          "--control-plane '" + controlPlane + "' is neither " + REDIS + " nor " + MX);
    }
  }
}
