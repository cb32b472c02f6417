package dev.mx.api.plan;

import java.util.List;
import java.util.Objects;

/**
 * Why one source of a {@link BoundingMode#SHARD shard}-bounded plan is read the way it is: the
 * option that won, a one-line reason, and every option the cost model weighed with its cost (or why
 * it was not feasible).
 */
public record BoundingDecision(
    String source, Option chosen, String reason, List<OptionCost> options) {

  /** How a source's bytes are read. */
  public enum Option {
    /** Exact segments straight into the parameters (ModelExpress; ARCHITECTURE §7.3). */
    EXACT("exact"),
    /**
     * Each touched shard whole into its own staging buffer, copies replayed locally ({@link
     * StagedShard}).
     */
    SHARD_STAGING("shard_staging"),
    /**
     * The whole source into one staging buffer of its global shape, copies replayed locally
     * (ModelExpress; ARCHITECTURE §7.3).
     */
    FULL_PULL("full_pull");

    private final String label;

    Option(String label) {
      this.label = label;
    }

    /** The name used in JSON and summaries. */
    public String label() {
      return label;
    }

    @Override
    public String toString() {
      return label;
    }
  }

  /**
   * One option's cost: descriptors, bytes on the wire, bytes the receiver re-slices locally, and
   * the modelled seconds; {@code rejected} is null for a feasible option, else why it was not taken
   * regardless of cost.
   */
  public record OptionCost(
      Option option,
      long descriptors,
      long wireBytes,
      long resliceBytes,
      double seconds,
      String rejected) {

    public OptionCost {
      Objects.requireNonNull(option, "option");
    }

    public boolean feasible() {
      return rejected == null;
    }
  }

  public BoundingDecision {
    Objects.requireNonNull(source, "source");
    Objects.requireNonNull(chosen, "chosen option of '" + source + "'");
    Objects.requireNonNull(reason, "reason of '" + source + "'");
    options = List.copyOf(options);
  }

  /** The cost of {@code option}, or null when it was not weighed. */
  public OptionCost cost(Option option) {
    for (OptionCost c : options) {
      if (c.option == option) {
        return c;
      }
    }
    return null;
  }
}
