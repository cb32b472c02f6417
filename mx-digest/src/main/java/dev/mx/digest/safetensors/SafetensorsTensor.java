package dev.mx.digest.safetensors;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * One named tensor of a safetensors file: its dtype, shape and row-major bytes. When read from a
 * {@link SafetensorsFile}, {@code data} is a read-only slice of the file's bytes, valid until the
 * file closes. Construction throws {@link IllegalArgumentException} when {@code data} is not
 * exactly shape &times; element size bytes.
 */
public record SafetensorsTensor(String name, DType dtype, Shape shape, MemorySegment data) {

  public SafetensorsTensor {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(dtype, "dtype of tensor '" + name + "'");
    Objects.requireNonNull(shape, "shape of tensor '" + name + "'");
    Objects.requireNonNull(data, "data of tensor '" + name + "'");
    long needed = shape.byteSize(dtype.elementSize());
    if (data.byteSize() != needed) {
      throw new IllegalArgumentException(
          "tensor '"
              + name
              + "' has "
              + data.byteSize()
              + " bytes but shape "
              + shape
              + " of "
              + dtype.safetensorsName()
              + " needs "
              + needed);
    }
  }

  /** Size of the data in bytes. */
  public long byteSize() {
    return data.byteSize();
  }
}
