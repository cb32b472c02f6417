package dev.mx.layout.trainer;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.layout.LayoutException;
import dev.mx.layout.model.GlobalTensor;
import dev.mx.layout.model.ModelArchitecture;
import java.util.ArrayList;
import java.util.List;

/**
 * FSDP's layout (ModelExpress; ARCHITECTURE §7.6): every global tensor is split on dim 0 like
 * {@code torch.chunk(N)} — chunks of {@code ceil(rows / N)} rows, so the last ranks may hold fewer
 * rows or none. A rank's buffer for a tensor is named after the tensor, holds exactly its rows, and
 * is published whole; ranks without rows hold nothing.
 */
public final class FsdpLayout implements TrainerLayout {
  private final ModelArchitecture model;
  private final TrainerTopology.Fsdp topology;
  private final DType dtype;

  public FsdpLayout(ModelArchitecture model, TrainerTopology.Fsdp topology, DType dtype) {
    this.model = model;
    this.topology = topology;
    this.dtype = dtype;
  }

  @Override
  public ModelArchitecture model() {
    return model;
  }

  @Override
  public TrainerTopology.Fsdp topology() {
    return topology;
  }

  @Override
  public DType dtype() {
    return dtype;
  }

  /**
   * Rows {@code [lo, hi)} of a dim-0 extent {@code rows} that {@code torch.chunk} gives rank {@code
   * rank}.
   */
  public static long[] chunkRows(long rows, int ranks, int rank) {
    long chunk = (rows + ranks - 1) / ranks;
    long lo = Math.min(rows, rank * chunk);
    long hi = Math.min(rows, lo + chunk);
    return new long[] {lo, hi};
  }

  @Override
  public TrainerRankLayout rank(int rank) {
    if (rank < 0 || rank >= worldSize()) {
      throw new LayoutException(
          "trainer rank " + rank + " is outside [0, " + worldSize() + ") for " + topology);
    }
    List<LocalBuffer> buffers = new ArrayList<>();
    List<AliasShard> aliases = new ArrayList<>();
    for (GlobalTensor t : model.tensors()) {
      long[] range = chunkRows(t.shape().dim(0), topology.ranks(), rank);
      if (range[1] == range[0]) {
        continue;
      }
      long[] dims = t.shape().dims();
      dims[0] = range[1] - range[0];
      long[] offset = new long[dims.length];
      offset[0] = range[0];
      Shape local = Shape.of(dims);
      buffers.add(new LocalBuffer(t.name(), dtype, local));
      aliases.add(new AliasShard(t.name(), t.shape(), offset, local, t.name(), 0, true));
    }
    return new TrainerRankLayout(rank, "fsdp" + rank, dtype, buffers, aliases);
  }
}
