package dev.mx.it.layout;

import dev.mx.api.digest.DigestProvider;
import dev.mx.api.digest.TileDigests;
import dev.mx.api.plan.Shard;
import dev.mx.api.plan.SourceInfo;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.api.util.Closeables;
import dev.mx.layout.PlanningInventory;
import dev.mx.layout.ShardAddressing;
import dev.mx.layout.trainer.AliasShard;
import dev.mx.layout.trainer.TrainerBuffers;
import dev.mx.layout.trainer.TrainerLayout;
import dev.mx.layout.trainer.TrainerRankLayout;
import dev.mx.refit.publish.TileLayout;
import dev.mx.transport.mem.MemTransportProvider;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Every trainer rank of a layout as a real in-process publisher: its buffers in native memory
 * allocated (and registered) by its own {@code mem} transport (session {@code trainer-<rank>}),
 * filled by the generator. Builds the sources a receiver discovers, with shard digests as a
 * publisher computes them.
 */
final class TrainerCluster implements AutoCloseable {
  private final TrainerLayout layout;
  private final List<TrainerBuffers> buffers = new ArrayList<>();
  private final List<Transport> transports = new ArrayList<>();

  TrainerCluster(TrainerLayout layout) {
    this.layout = layout;
    try {
      for (TrainerRankLayout r : layout.ranks()) {
        Transport t = new MemTransportProvider().create(TransportConfig.of(session(r)));
        transports.add(t);
        // Through the transport, as trainers allocate (shareable memory where the transport has
        // it).
        buffers.add(TrainerBuffers.allocate(r, t::allocate));
      }
    } catch (RuntimeException e) {
      close();
      throw e;
    }
  }

  static String session(TrainerRankLayout r) {
    return "trainer-" + r.rank();
  }

  /** Writes the generator's values of {@code step} into every rank's buffers. */
  void fill(long step) {
    for (TrainerBuffers b : buffers) {
      b.fill(step, 2);
    }
  }

  /** Writes each tensor with the generator's values of the step {@code stepOf} names for it. */
  void fill(java.util.function.ToLongFunction<String> stepOf) {
    for (TrainerBuffers b : buffers) {
      b.fill(stepOf, 2);
    }
  }

  /**
   * The merged sources at the buffers' real addresses, each shard with its digest over its current
   * bytes.
   */
  Map<String, SourceInfo> sources(DigestProvider digests) {
    return sources(digests, 0);
  }

  /**
   * As {@link #sources(DigestProvider)}, each shard larger than {@code tileBytes} also with digests
   * over tiles of {@code tileBytes} (0: none), as a publisher with {@code mx.publish.tile-bytes}
   * publishes them.
   */
  Map<String, SourceInfo> sources(DigestProvider digests, long tileBytes) {
    return sources(digests, new TileLayout(tileBytes, 1));
  }

  /**
   * As {@link #sources(DigestProvider)}, each shard with the tile digests a publisher of {@code
   * tiles} lists (byte tiles, or column tiles for shards split along their last dimension).
   */
  Map<String, SourceInfo> sources(DigestProvider digests, TileLayout tiles) {
    Map<Long, String> digestByAddress = new HashMap<>();
    Map<Long, TileDigests> tilesByAddress = new HashMap<>();
    Map<TrainerRankLayout, TrainerBuffers> byRank = new HashMap<>();
    for (TrainerBuffers b : buffers) {
      byRank.put(b.layout(), b);
      for (AliasShard a : b.layout().published()) {
        digestByAddress.put(b.address(a), digests.digest(b.slice(a)));
        MemorySegment bytes = b.slice(a);
        TileDigests t =
            tiles.digest(
                digests, bytes, a.shape(), a.globalShape(), (int) (bytes.byteSize() / a.numel()));
        if (t != null) {
          tilesByAddress.put(b.address(a), t);
        }
      }
    }
    ShardAddressing real =
        new ShardAddressing() {
          @Override
          public String session(TrainerRankLayout rank) {
            return TrainerCluster.session(rank);
          }

          @Override
          public long address(TrainerRankLayout rank, AliasShard alias) {
            return byRank.get(rank).address(alias);
          }
        };
    Map<String, SourceInfo> out = new LinkedHashMap<>();
    PlanningInventory.sources(layout.ranks(), real)
        .forEach(
            (name, info) -> {
              List<Shard> shards = new ArrayList<>();
              info.shards()
                  .forEach(
                      s ->
                          shards.add(
                              s.withDigests(
                                  digestByAddress.get(s.addr()), tilesByAddress.get(s.addr()))));
              out.put(name, new SourceInfo(info.globalShape(), info.dtype(), shards));
            });
    return out;
  }

  /** The trainer memory holding a published shard (found by its address), e.g. to corrupt it. */
  java.lang.foreign.MemorySegment bytesOf(Shard shard) {
    for (TrainerBuffers b : buffers) {
      for (AliasShard a : b.layout().published()) {
        if (b.address(a) == shard.addr()
            && TrainerCluster.session(b.layout()).equals(shard.session())) {
          return b.slice(a);
        }
      }
    }
    throw new IllegalArgumentException("no trainer buffer holds " + shard);
  }

  Map<String, byte[]> peerMetadata() {
    Map<String, byte[]> m = new LinkedHashMap<>();
    for (int r = 0; r < transports.size(); r++) {
      m.put(session(buffers.get(r).layout()), transports.get(r).localMetadata());
    }
    return m;
  }

  @Override
  public void close() {
    // The buffers first (their registrations deregister and free them), then the transports that
    // allocated
    // them; each in reverse creation order.
    List<AutoCloseable> all = new ArrayList<>();
    all.addAll(buffers.reversed());
    all.addAll(transports.reversed());
    Closeables.closeAll(all);
  }
}
