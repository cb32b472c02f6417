package dev.mx.layout;

import dev.mx.layout.trainer.AliasShard;
import dev.mx.layout.trainer.LocalBuffer;
import dev.mx.layout.trainer.TrainerRankLayout;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.Map;

/**
 * Where a trainer rank's alias shards live: the rank's transport session and each alias's absolute
 * address.
 */
public interface ShardAddressing {

  String session(TrainerRankLayout rank);

  long address(TrainerRankLayout rank, AliasShard alias);

  /**
   * Made-up addresses for planning without memory: session {@code trainer-<rank>}, rank {@code r}'s
   * buffers laid out back to back (64-byte aligned) from {@code (r + 1) << 40}.
   */
  static ShardAddressing synthetic() {
    Map<TrainerRankLayout, Map<String, Long>> bases = new IdentityHashMap<>();
    return new ShardAddressing() {
      @Override
      public String session(TrainerRankLayout rank) {
        return "trainer-" + rank.rank();
      }

      @Override
      public long address(TrainerRankLayout rank, AliasShard alias) {
        Map<String, Long> b =
            bases.computeIfAbsent(
                rank,
                r -> {
                  Map<String, Long> m = new HashMap<>();
                  long next = (r.rank() + 1L) << 40;
                  for (LocalBuffer buf : r.buffers()) {
                    m.put(buf.name(), next);
                    next += (buf.byteSize() + 63) / 64 * 64;
                  }
                  return m;
                });
        return b.get(alias.bufferName()) + alias.elementOffset() * rank.dtype().elementSize();
      }
    };
  }
}
