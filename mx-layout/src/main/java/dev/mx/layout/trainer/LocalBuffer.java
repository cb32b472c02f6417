package dev.mx.layout.trainer;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import java.util.Objects;

/**
 * One contiguous row-major tensor a trainer rank allocates, under the trainer's own name (e.g.
 * Megatron's {@code decoder.layers.3.self_attention.linear_qkv.weight}, or the Hugging Face name
 * under FSDP).
 */
public record LocalBuffer(String name, DType dtype, Shape shape) {

  public LocalBuffer {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(dtype, "dtype of " + name);
    Objects.requireNonNull(shape, "shape of " + name);
  }

  public long byteSize() {
    return shape.byteSize(dtype.elementSize());
  }
}
