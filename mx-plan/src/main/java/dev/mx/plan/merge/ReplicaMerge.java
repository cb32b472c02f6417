package dev.mx.plan.merge;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.metadata.PublishedShard;
import dev.mx.api.metadata.PublishedTensor;
import dev.mx.api.metadata.ReplicaShard;
import dev.mx.api.metadata.ShardTable;
import dev.mx.api.plan.Shard;
import dev.mx.api.plan.SourceInfo;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Merges the shard tables of many publishers (ModelExpress; ARCHITECTURE §7.5 {@code
 * merge_shard_tables} + {@code build_sources}). For each tensor name the first table that offers it
 * fixes its global shape and dtype; a later table that disagrees is an error naming the tensor and
 * both publishers. Shards are de-duplicated by exact geometry (offset and shape), keeping the first
 * offer in table order, so data-parallel replicas collapse to one owner while distinct geometries
 * (fan-in) are all kept. The later offers of a box (the replicas every DP and EP rank publishes)
 * are kept aside in {@link MergedSources#replicas()}, for {@link ReplicaAssignment} to spread a
 * receiver's reads over them; a ModelExpress table needs no extra key for this: a replica is any
 * shard whose tensor, offset and shape another publisher offered first. mx publishers list their
 * replicas apart ({@link ShardTable#replicas()}, compact): each must name a box some table lists in
 * full, and joins that box's replicas after the tables' own.
 */
public final class ReplicaMerge {
  private ReplicaMerge() {}

  /** One merged tensor: who first published it, and its de-duplicated shards. */
  private static final class Merged {
    final PublishedTensor first;
    final String firstPublisher;
    final DType dtype;
    final List<PublishedShard> shards = new ArrayList<>();
    final List<PublishedShard> replicas = new ArrayList<>();
    final Set<Geometry> seen = new HashSet<>();

    Merged(PublishedTensor first, String firstPublisher, DType dtype) {
      this.first = first;
      this.firstPublisher = firstPublisher;
      this.dtype = dtype;
    }
  }

  /**
   * A box's offset and shape, compared by value. Built once per offered shard of every table, so it
   * keeps the shard's offset array rather than boxing it ({@link PublishedShard#shardOffset()}
   * returns a copy, nobody writes it).
   */
  private static final class Geometry {
    private final long[] offset;
    private final Shape shape;
    private final int hash;

    private Geometry(long[] offset, Shape shape) {
      this.offset = offset;
      this.shape = shape;
      this.hash = 31 * Arrays.hashCode(offset) + shape.hashCode();
    }

    static Geometry of(PublishedShard s) {
      return new Geometry(s.shardOffset(), s.shape());
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Geometry g
          && hash == g.hash
          && Arrays.equals(offset, g.offset)
          && shape.equals(g.shape);
    }

    @Override
    public int hashCode() {
      return hash;
    }
  }

  /**
   * Merges tables in the given order.
   *
   * @throws IllegalArgumentException when two publishers disagree on a tensor's shape or dtype, or
   *     a dtype label is unknown, naming the tensor and the publisher(s)
   */
  public static List<PublishedTensor> mergeShardTables(List<ShardTable> tables) {
    return owners(byName(tables));
  }

  private static List<PublishedTensor> owners(Map<String, Merged> byName) {
    List<PublishedTensor> out = new ArrayList<>(byName.size());
    for (Merged m : byName.values()) {
      PublishedTensor f = m.first;
      out.add(new PublishedTensor(f.name(), f.dtype(), f.elsize(), f.fullShape(), m.shards));
    }
    return out;
  }

  private static Map<String, Merged> byName(List<ShardTable> tables) {
    Map<String, Merged> byName = new LinkedHashMap<>();
    for (ShardTable table : tables) {
      String publisher = table.agentName();
      for (PublishedTensor t : table.tensors()) {
        DType dtype = dtype(t, publisher);
        Merged m = byName.get(t.name());
        if (m == null) {
          m = new Merged(t, publisher, dtype);
          byName.put(t.name(), m);
        } else if (!m.first.fullShape().equals(t.fullShape()) || m.dtype != dtype) {
          throw new IllegalArgumentException(
              "tensor '"
                  + t.name()
                  + "' is published inconsistently: publisher '"
                  + m.firstPublisher
                  + "' has shape "
                  + m.first.fullShape()
                  + " dtype "
                  + m.first.dtype()
                  + ", publisher '"
                  + publisher
                  + "' has shape "
                  + t.fullShape()
                  + " dtype "
                  + t.dtype());
        }
        for (PublishedShard s : t.shards()) {
          if (m.seen.add(Geometry.of(s))) {
            m.shards.add(s);
          } else {
            m.replicas.add(s);
          }
        }
      }
    }
    // Replicas listed apart name a box some table lists in full, whichever table comes first.
    for (ShardTable table : tables) {
      for (ReplicaShard r : table.replicas()) {
        Merged m = byName.get(r.tensor());
        if (m == null || !m.seen.contains(Geometry.of(r.shard()))) {
          throw new IllegalArgumentException(
              "publisher '"
                  + table.agentName()
                  + "' lists a replica of tensor '"
                  + r.tensor()
                  + "' at "
                  + Arrays.toString(r.shard().shardOffset())
                  + " shape "
                  + r.shard().shape()
                  + (m == null
                      ? ", but no publisher lists the tensor"
                      : ", but no publisher lists that box of it (the owner's)"));
        }
        m.replicas.add(r.shard());
      }
    }
    return byName;
  }

  /**
   * Builds the planner's sources from merged tensors: each shard's session is its agent name.
   *
   * @param agentEndpoints metadata endpoints by agent name, carried into the result
   * @throws IllegalArgumentException naming the tensor and shard when a shard is malformed or the
   *     element size contradicts the dtype
   */
  public static MergedSources buildSources(
      List<PublishedTensor> merged, Map<String, String> agentEndpoints) {
    Map<String, SourceInfo> sources = new LinkedHashMap<>();
    Map<String, String> sessionToAgent = new LinkedHashMap<>();
    Map<String, Integer> sessionToDevice = new LinkedHashMap<>();
    for (PublishedTensor t : merged) {
      DType dtype = dtype(t, null);
      if (t.elsize() != dtype.elementSize()) {
        throw new IllegalArgumentException(
            "tensor '"
                + t.name()
                + "': elsize "
                + t.elsize()
                + " contradicts dtype "
                + t.dtype()
                + " ("
                + dtype.elementSize()
                + " bytes)");
      }
      List<Shard> shards = shards(t, sessionToAgent, sessionToDevice);
      sources.put(t.name(), new SourceInfo(t.fullShape(), dtype, t.elsize(), shards));
    }
    return new MergedSources(sources, sessionToAgent, sessionToDevice, agentEndpoints);
  }

  /**
   * The planner's shards of {@code t}'s published shards, noting each publisher's agent and device.
   */
  private static List<Shard> shards(
      PublishedTensor t, Map<String, String> sessionToAgent, Map<String, Integer> sessionToDevice) {
    List<Shard> shards = new ArrayList<>(t.shards().size());
    for (int i = 0; i < t.shards().size(); i++) {
      PublishedShard s = t.shards().get(i);
      String session = s.agentName();
      try {
        shards.add(
            new Shard(
                s.shardOffset(),
                s.shape(),
                session,
                s.addr(),
                t.elsize(),
                s.digest(),
                s.tiles(),
                s.changedStep()));
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(
            "tensor '"
                + t.name()
                + "' shard #"
                + i
                + " from publisher '"
                + session
                + "': "
                + e.getMessage(),
            e);
      }
      sessionToAgent.putIfAbsent(session, s.agentName());
      sessionToDevice.putIfAbsent(session, s.deviceId());
    }
    return shards;
  }

  /** Merge and build in one step ({@code gather_sources} without the discovery). */
  public static MergedSources merge(List<ShardTable> tables) {
    Map<String, String> endpoints = new LinkedHashMap<>();
    for (ShardTable t : tables) {
      endpoints.putIfAbsent(t.agentName(), t.metadataEndpoint());
    }
    Map<String, Merged> byName = byName(tables);
    MergedSources owners = buildSources(owners(byName), endpoints);
    // The owners' session maps stay as ModelExpress builds them; replicas' peers come with tables.
    Map<String, String> replicaAgents = new LinkedHashMap<>();
    Map<String, Integer> replicaDevices = new LinkedHashMap<>();
    Map<String, List<Shard>> replicas = new LinkedHashMap<>();
    for (Merged m : byName.values()) {
      if (!m.replicas.isEmpty()) {
        PublishedTensor f = m.first;
        PublishedTensor offered =
            new PublishedTensor(f.name(), f.dtype(), f.elsize(), f.fullShape(), m.replicas);
        replicas.put(f.name(), shards(offered, replicaAgents, replicaDevices));
      }
    }
    return new MergedSources(
        owners.sources(), owners.sessionToAgent(), owners.sessionToDevice(), endpoints, replicas);
  }

  private static DType dtype(PublishedTensor t, String publisher) {
    try {
      return DType.parse(t.dtype());
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "tensor '"
              + t.name()
              + "'"
              + (publisher == null ? "" : " from publisher '" + publisher + "'")
              + ": "
              + e.getMessage(),
          e);
    }
  }
}
