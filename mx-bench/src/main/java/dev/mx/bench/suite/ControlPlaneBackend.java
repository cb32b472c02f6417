package dev.mx.bench.suite;

import dev.mx.api.metadata.WeightVersionStore;

/**
 * Where the scale bench's simulated participants speak mx's version protocol: one {@code
 * redis-server} that holds every shard table ({@code redis:}), or a RefitService server that holds
 * only shard records while each trainer rank serves its own table ({@code mx://}, issue 36).
 */
interface ControlPlaneBackend extends AutoCloseable {

  /** The stores one rank count's participants use; closed when the rank count is done. */
  interface Participants extends AutoCloseable {
    WeightVersionStore trainer(int rank);

    WeightVersionStore receiver(int rank);

    @Override
    void close();
  }

  /** A measurement of the central service's cost, started by {@link #meter}. */
  interface Meter {
    ServiceCost stop();
  }

  /** One line for the progress output: which server, where. */
  String describe();

  /** The name of the central service in metric names and tables: {@code redis}, {@code central}. */
  String costName();

  Participants participants(int trainers);

  Meter meter();

  /**
   * How long serving every receiver's fetch keeps the busiest table server busy, the fetch's bound
   * at scale besides one receiver's own fetch: the central server's time in the whole fetch phase
   * where it serves every table, or one trainer serving its largest table to every receiver where
   * each serves its own.
   *
   * @param fetchServerMs the central service's time in the fetch phase, per step
   */
  double fetchServingMs(double fetchServerMs, byte[] largestTable, int receivers) throws Exception;

  /** What {@link #fetchServingMs} measures, for the model's printout. */
  String fetchServingLabel();

  /**
   * How the model takes a phase to a cluster where every participant has its own host: true where
   * participants talk to each other and the central service answers small records ({@code mx://}),
   * so a phase takes the longer of one participant alone and the central service's busy time; false
   * where every byte goes through one server (Redis), whose queue the p99 under this host's
   * contention shows.
   */
  boolean phasesScaleOut();

  /** {@code failure}, or what it became when the backend's own server died under it. */
  RuntimeException explain(RuntimeException failure);

  @Override
  void close();
}
