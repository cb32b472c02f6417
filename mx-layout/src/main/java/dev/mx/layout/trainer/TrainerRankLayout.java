package dev.mx.layout.trainer;

import dev.mx.api.DType;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * What one trainer rank holds: the buffers it allocates and every alias shard inside them
 * (published or only held). Any buffer element no alias covers is vocabulary padding and stays
 * zero.
 *
 * @param rank the global rank (Megatron order: tp fastest, then ep, then dp, then pp)
 * @param label a readable coordinate, e.g. {@code tp1-pp0-ep0} or {@code fsdp2}
 */
public record TrainerRankLayout(
    int rank, String label, DType dtype, List<LocalBuffer> buffers, List<AliasShard> aliases) {

  public TrainerRankLayout {
    Objects.requireNonNull(label, "label");
    Objects.requireNonNull(dtype, "dtype");
    buffers = List.copyOf(buffers);
    aliases = List.copyOf(aliases);
    Map<String, LocalBuffer> byName = new LinkedHashMap<>();
    for (LocalBuffer b : buffers) {
      if (byName.put(b.name(), b) != null) {
        throw new IllegalArgumentException(
            "rank " + label + ": buffer '" + b.name() + "' is declared twice");
      }
      if (b.dtype() != dtype) {
        throw new IllegalArgumentException(
            "rank "
                + label
                + ": buffer '"
                + b.name()
                + "' is "
                + b.dtype()
                + " but the rank holds "
                + dtype);
      }
    }
    for (AliasShard a : aliases) {
      LocalBuffer b = byName.get(a.bufferName());
      if (b == null) {
        throw new IllegalArgumentException(
            "rank "
                + label
                + ": alias of '"
                + a.hfName()
                + "' names unknown buffer '"
                + a.bufferName()
                + "'");
      }
      if (a.elementOffset() + a.numel() > b.shape().numel()) {
        throw new IllegalArgumentException(
            "rank "
                + label
                + ": "
                + a
                + " runs past the end of buffer '"
                + b.name()
                + "' ("
                + b.shape().numel()
                + " elements)");
      }
    }
  }

  /**
   * The aliases this rank owns (the lowest rank holding each box): what a job without replicas
   * would publish. A rank's shard table carries all its {@link #aliases()}, replicas included.
   */
  public List<AliasShard> published() {
    List<AliasShard> out = new ArrayList<>();
    for (AliasShard a : aliases) {
      if (a.published()) {
        out.add(a);
      }
    }
    return Collections.unmodifiableList(out);
  }

  public LocalBuffer buffer(String name) {
    for (LocalBuffer b : buffers) {
      if (b.name().equals(name)) {
        return b;
      }
    }
    throw new IllegalArgumentException("rank " + label + " has no buffer '" + name + "'");
  }

  /** Bytes of every buffer together. */
  public long byteSize() {
    long n = 0;
    for (LocalBuffer b : buffers) {
      n = Math.addExact(n, b.byteSize());
    }
    return n;
  }
}
