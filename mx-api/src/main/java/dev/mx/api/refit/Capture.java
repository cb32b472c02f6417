package dev.mx.api.refit;

import dev.mx.api.Box;
import dev.mx.api.annotation.Experimental;
import dev.mx.api.plan.CaptureResult;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A geometry capture: the recorded copies, the complete parameter layout of the engine, and the
 * elements of each parameter that no copy is meant to write (vocabulary padding rows, say), as
 * boxes in the parameter's own shape. The receiver's element coverage gate requires every other
 * element to be written exactly once.
 */
@Experimental
public record Capture(
    CaptureResult result, Map<String, ParamSpec> paramLayout, Map<String, List<Box>> padding) {

  public Capture {
    paramLayout = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(paramLayout));
    Map<String, List<Box>> p = new LinkedHashMap<>();
    if (padding != null) {
      padding.forEach((k, v) -> p.put(k, List.copyOf(v)));
    }
    padding = java.util.Collections.unmodifiableMap(p);
  }

  /** A capture that declares no padding: every element of every parameter must be written. */
  public Capture(CaptureResult result, Map<String, ParamSpec> paramLayout) {
    this(result, paramLayout, Map.of());
  }
}
