package dev.mx.metadata;

import dev.mx.api.Shape;
import dev.mx.api.metadata.PublishedShard;
import dev.mx.api.metadata.PublishedTensor;
import dev.mx.api.metadata.ShardTable;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Shard tables for tests: a publisher of {@code tensors} column-sharded tensors, digests optional.
 */
final class TestTables {
  private TestTables() {}

  static ShardTable table(String agent, int tensors, Long step, boolean digests) {
    List<PublishedTensor> list = new ArrayList<>();
    for (int i = 0; i < tensors; i++) {
      List<PublishedShard> shards = new ArrayList<>();
      for (int j = 0; j < 2; j++) {
        String digest = digests ? String.format("%032x", (long) i * 31 + j) : null;
        shards.add(
            new PublishedShard(
                agent,
                j,
                0x7f00_0000_0000L + i * 4096L + j * 2048L,
                new long[] {0, j * 4L},
                Shape.of(8, 4),
                digest));
      }
      list.add(
          new PublishedTensor(
              "model.layers." + i + ".mlp.up_proj.weight",
              "torch.bfloat16",
              2,
              Shape.of(8, 8),
              shards));
    }
    return new ShardTable(
        agent,
        "127.0.0.1:" + (5555 + tensors),
        ("agent-metadata-of-" + agent).getBytes(StandardCharsets.UTF_8),
        list,
        step);
  }

  static byte[] blob(String agent, int tensors) {
    return ShardTableCodec.standard().encode(table(agent, tensors, 7L, true));
  }
}
