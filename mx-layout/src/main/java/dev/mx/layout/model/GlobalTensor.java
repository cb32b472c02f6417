package dev.mx.layout.model;

import dev.mx.api.Shape;
import java.util.Objects;

/**
 * One tensor of the model as Hugging Face names and shapes it, e.g. {@code
 * model.layers.3.self_attn.q_proj.weight} of shape {@code [2048, 2048]}.
 *
 * @param layer the decoder layer, or -1 for tensors outside the layers
 * @param expert the expert index, or -1 for tensors outside the experts
 */
public record GlobalTensor(String name, Shape shape, TensorRole role, int layer, int expert) {

  public GlobalTensor {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(shape, "shape of " + name);
    Objects.requireNonNull(role, "role of " + name);
  }

  public long numel() {
    return shape.numel();
  }
}
