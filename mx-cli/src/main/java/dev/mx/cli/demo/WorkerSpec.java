package dev.mx.cli.demo;

import java.util.Map;

/**
 * Everything a worker needs to run, serializable as JSON so a child JVM receives exactly what an
 * in-process worker gets.
 *
 * @param role {@code trainer} or {@code receiver}
 * @param rank the worker's rank within its role
 * @param model a model name or a path to a {@code config.json}
 * @param trainer the trainer topology ({@code tp}, {@code pp}, {@code ep}, {@code fsdp})
 * @param inference the inference topology ({@code tp}, {@code ep})
 * @param transport the transport name (resolved, never {@code auto})
 * @param metadata the metadata store URI
 * @param identity what publishers announce and receivers discover (one per job)
 * @param trainerDtype dtype trainers publish
 * @param inferenceDtype dtype of the inference parameters
 * @param wire {@code fused} or {@code phased}
 * @param verify {@code all}, {@code strict}, {@code whole-shards} or {@code off}
 * @param timeoutSeconds the optional overall cap on each wait ({@code --timeout}); 0 sets none:
 *     waits then last while the peers waited on progress
 * @param heartbeatSeconds publisher heartbeat interval; liveness timeout is three of them
 * @param device where the weights live: {@code host} (also when null, from a spec without the
 *     field) or {@code cuda:N}
 * @param stallLimitSeconds how long a peer waited on may make no progress ({@code --stall-limit});
 *     0 (also from a spec without the field) takes {@code mx.stall-limit}
 * @param install how receivers install: {@code in-place} (into the live weights, bounded staging)
 *     or {@code copy} (receive buffers copied into the live weights once every rank verified; also
 *     when null)
 * @param trainerBuffers buffer sets per trainer rank under weight versions: 1 (zero-copy, the next
 *     step waits for readers) or 2 (training overlaps reading; also when 0)
 * @param stagingBytes the receivers' staging budget ({@code mx.receiver.staging-bytes}); 0 for the
 *     default
 * @param expertMap the inference engine's expert placement ({@link
 *     dev.mx.layout.vllm.ExpertPlacement} JSON, resolved from {@code --expert-map}); null keeps the
 *     trainer's expert order
 * @param changedPercent the percentage of weight elements each step changes ({@code --changed};
 *     {@link dev.mx.layout.gen.ChangeSchedule}); null: 100
 * @param noDelta whether receivers read every tensor every step ({@code --no-delta}) rather than
 *     keeping those the publishers claim unchanged
 * @param source where receivers take their first weights before following the trainers ({@code
 *     --source}): {@code checkpoint:DIR} (an absolute path), or null for the trainers only
 * @param group a receiver's inference group ({@code --inference-groups}, {@code
 *     --serve-installed}); null: the only group, reading the trainers
 */
public record WorkerSpec(
    String role,
    int rank,
    String model,
    Map<String, Integer> trainer,
    Map<String, Integer> inference,
    String transport,
    String metadata,
    String identity,
    String trainerDtype,
    String inferenceDtype,
    String wire,
    String verify,
    double timeoutSeconds,
    double heartbeatSeconds,
    String device,
    double stallLimitSeconds,
    String install,
    int trainerBuffers,
    long stagingBytes,
    String expertMap,
    Integer changedPercent,
    boolean noDelta,
    String source,
    InferenceGroup group) {

  /**
   * Receiver {@code index} of {@code count} inference groups; with {@code serveInstalled} group 0
   * reads the trainers and the others read installed weights in doubling rounds: round k's groups
   * {@code [2^(k-1), 2^k)} each read the group {@code 2^(k-1)} below it (1 from 0; 2, 3 from 0, 1;
   * 4…7 from 0…3), so every group holding the step serves one more in each round and {@code n}
   * groups hold it after {@code ceil(log2 n)} rounds. Without, every group reads the trainers.
   */
  public record InferenceGroup(int index, int count, boolean serveInstalled) {
    /** Whether this group reads another group's installed weights. */
    public boolean readsInstalled() {
      return serveInstalled && index > 0;
    }

    /** The group whose installed weights this one reads: its index less its highest bit. */
    public int sourceGroup() {
      return index - Integer.highestOneBit(index);
    }

    /** The fan-out round this group reads in: 0 for the trainers' readers, then 1, 2, 3… */
    public int round() {
      return readsInstalled() ? 32 - Integer.numberOfLeadingZeros(index) : 0;
    }

    /** Whether some later group reads this one's installed weights. */
    public boolean serves() {
      return serveInstalled && index + (index == 0 ? 1 : 2 * Integer.highestOneBit(index)) < count;
    }
  }

  /** This receiver's group (the only one when the spec names none). */
  public InferenceGroup inferenceGroup() {
    return group != null ? group : new InferenceGroup(0, 1, false);
  }

  /** The same worker in inference group {@code g}. */
  public WorkerSpec withGroup(InferenceGroup g) {
    Copy c = new Copy(this);
    c.group = g;
    return c.build();
  }

  /** A spec that installs by copying from two trainer buffer sets, as before in-place installs. */
  public WorkerSpec(
      String role,
      int rank,
      String model,
      Map<String, Integer> trainer,
      Map<String, Integer> inference,
      String transport,
      String metadata,
      String identity,
      String trainerDtype,
      String inferenceDtype,
      String wire,
      String verify,
      double timeoutSeconds,
      double heartbeatSeconds,
      String device,
      double stallLimitSeconds) {
    this(
        role,
        rank,
        model,
        trainer,
        inference,
        transport,
        metadata,
        identity,
        trainerDtype,
        inferenceDtype,
        wire,
        verify,
        timeoutSeconds,
        heartbeatSeconds,
        device,
        stallLimitSeconds,
        "copy",
        2,
        0,
        null,
        null,
        false,
        null,
        null);
  }

  /** Whether receivers write the live weights in place. */
  public boolean inPlace() {
    return "in-place".equals(install);
  }

  /** Buffer sets per trainer rank under weight versions (1 or 2). */
  public int trainerSets() {
    return trainerBuffers == 1 ? 1 : 2;
  }

  /** The same job with the given install mode, trainer buffer sets and staging budget. */
  public WorkerSpec withMemory(String installMode, int buffers, long staging) {
    Copy c = new Copy(this);
    c.install = installMode;
    c.trainerBuffers = buffers;
    c.stagingBytes = staging;
    return c.build();
  }

  /** A spec with weights in host memory. */
  public WorkerSpec(
      String role,
      int rank,
      String model,
      Map<String, Integer> trainer,
      Map<String, Integer> inference,
      String transport,
      String metadata,
      String identity,
      String trainerDtype,
      String inferenceDtype,
      String wire,
      String verify,
      double timeoutSeconds,
      double heartbeatSeconds) {
    this(
        role,
        rank,
        model,
        trainer,
        inference,
        transport,
        metadata,
        identity,
        trainerDtype,
        inferenceDtype,
        wire,
        verify,
        timeoutSeconds,
        heartbeatSeconds,
        "host",
        0);
  }

  /** Where the weights live ({@link #device()} parsed; host when absent). */
  public dev.mx.api.transport.MemoryKind memoryKind() {
    return device == null
        ? dev.mx.api.transport.MemoryKind.HOST
        : dev.mx.api.transport.MemoryKind.parse(device);
  }

  /** The same worker with its weights in {@code kind}'s memory. */
  public WorkerSpec withDevice(dev.mx.api.transport.MemoryKind kind) {
    Copy c = new Copy(this);
    c.device = kind.toString();
    return c.build();
  }

  /** The same worker with another stall limit (seconds; 0 takes {@code mx.stall-limit}). */
  public WorkerSpec withStallLimit(double seconds) {
    Copy c = new Copy(this);
    c.stallLimitSeconds = seconds;
    return c.build();
  }

  public int trainerWorldSize() {
    return Workers.trainerTopology(this).worldSize();
  }

  /** The same worker expecting (or running) another trainer topology. */
  public WorkerSpec withTrainer(Map<String, Integer> newTrainer) {
    Copy c = new Copy(this);
    c.trainer = Map.copyOf(newTrainer);
    return c.build();
  }

  /** The same worker with another expert placement (JSON; null: the trainer's order). */
  public WorkerSpec withExpertMap(String placementJson) {
    Copy c = new Copy(this);
    c.expertMap = placementJson;
    return c.build();
  }

  /** The same worker with another change schedule and delta switch. */
  public WorkerSpec withDelta(Integer percent, boolean readEverything) {
    Copy c = new Copy(this);
    c.changedPercent = percent;
    c.noDelta = readEverything;
    return c.build();
  }

  /** The same worker taking its first weights from {@code newSource} ({@code --source}). */
  public WorkerSpec withSource(String newSource) {
    Copy c = new Copy(this);
    c.source = newSource;
    return c.build();
  }

  /** The checkpoint directory of {@code --source checkpoint:DIR}, or null. */
  public java.nio.file.Path checkpointDir() {
    return SourceOption.checkpointDir(source);
  }

  /** The percentage of weight elements each step changes (100 when unset). */
  public int changed() {
    return changedPercent == null ? 100 : changedPercent;
  }

  public WorkerSpec withRole(String newRole, int newRank) {
    Copy c = new Copy(this);
    c.role = newRole;
    c.rank = newRank;
    return c.build();
  }

  /** A mutable copy of a spec: each {@code with} method changes what it names and builds anew. */
  private static final class Copy {
    String role;
    int rank;
    String model;
    Map<String, Integer> trainer;
    Map<String, Integer> inference;
    String transport;
    String metadata;
    String identity;
    String trainerDtype;
    String inferenceDtype;
    String wire;
    String verify;
    double timeoutSeconds;
    double heartbeatSeconds;
    String device;
    double stallLimitSeconds;
    String install;
    int trainerBuffers;
    long stagingBytes;
    String expertMap;
    Integer changedPercent;
    boolean noDelta;
    String source;
    InferenceGroup group;

    Copy(WorkerSpec s) {
      role = s.role;
      rank = s.rank;
      model = s.model;
      trainer = s.trainer;
      inference = s.inference;
      transport = s.transport;
      metadata = s.metadata;
      identity = s.identity;
      trainerDtype = s.trainerDtype;
      inferenceDtype = s.inferenceDtype;
      wire = s.wire;
      verify = s.verify;
      timeoutSeconds = s.timeoutSeconds;
      heartbeatSeconds = s.heartbeatSeconds;
      device = s.device;
      stallLimitSeconds = s.stallLimitSeconds;
      install = s.install;
      trainerBuffers = s.trainerBuffers;
      stagingBytes = s.stagingBytes;
      expertMap = s.expertMap;
      changedPercent = s.changedPercent;
      noDelta = s.noDelta;
      source = s.source;
      group = s.group;
    }

    WorkerSpec build() {
      return new WorkerSpec(
          role,
          rank,
          model,
          trainer,
          inference,
          transport,
          metadata,
          identity,
          trainerDtype,
          inferenceDtype,
          wire,
          verify,
          timeoutSeconds,
          heartbeatSeconds,
          device,
          stallLimitSeconds,
          install,
          trainerBuffers,
          stagingBytes,
          expertMap,
          changedPercent,
          noDelta,
          source,
          group);
    }
  }
}
