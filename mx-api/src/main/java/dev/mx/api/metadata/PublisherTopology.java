package dev.mx.api.metadata;

import java.util.Objects;

/**
 * What a publisher declares about the trainer job it belongs to (the optional {@code
 * publisher_topology} key of a shard table), so a receiver expecting another topology fails at
 * once, naming both.
 *
 * @param rank this publisher's rank, in {@code [0, worldSize)}
 * @param worldSize how many publishers the job has
 * @param layout the trainer layout, e.g. {@code megatron tp=4 pp=1 ep=1}
 */
public record PublisherTopology(int rank, int worldSize, String layout) {

  public PublisherTopology {
    Objects.requireNonNull(layout, "layout");
    if (worldSize < 1 || rank < 0 || rank >= worldSize) {
      throw new IllegalArgumentException(
          "publisher topology: rank " + rank + " of world size " + worldSize + " is out of range");
    }
  }

  @Override
  public String toString() {
    return layout + " (" + worldSize + " rank" + (worldSize == 1 ? "" : "s") + ")";
  }
}
