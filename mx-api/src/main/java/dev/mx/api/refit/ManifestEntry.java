package dev.mx.api.refit;

import dev.mx.api.DType;
import dev.mx.api.Shape;

/** A source tensor offered to a geometry source: its global name, dtype and shape. */
public record ManifestEntry(String name, DType dtype, Shape globalShape) {}
