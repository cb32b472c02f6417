package dev.mx.api.refit;

import dev.mx.api.DType;
import dev.mx.api.Shape;

/** The load-time shape and dtype of one engine parameter. */
public record ParamSpec(Shape shape, DType dtype) {

  public long byteSize() {
    return shape.byteSize(dtype.elementSize());
  }
}
