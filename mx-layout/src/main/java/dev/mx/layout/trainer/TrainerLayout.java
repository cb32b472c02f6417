package dev.mx.layout.trainer;

import dev.mx.api.DType;
import dev.mx.layout.model.ModelArchitecture;
import java.util.ArrayList;
import java.util.List;

/** Every trainer rank's buffers and alias shards for one model, topology and dtype. */
public interface TrainerLayout {

  ModelArchitecture model();

  TrainerTopology topology();

  DType dtype();

  default int worldSize() {
    return topology().worldSize();
  }

  /** The layout of global rank {@code rank}, in {@code [0, worldSize())}. */
  TrainerRankLayout rank(int rank);

  /** Every rank's layout, by global rank. */
  default List<TrainerRankLayout> ranks() {
    List<TrainerRankLayout> out = new ArrayList<>(worldSize());
    for (int r = 0; r < worldSize(); r++) {
      out.add(rank(r));
    }
    return out;
  }
}
