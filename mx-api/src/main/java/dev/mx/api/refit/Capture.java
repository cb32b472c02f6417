package dev.mx.api.refit;

import dev.mx.api.annotation.Experimental;
import dev.mx.api.plan.CaptureResult;
import java.util.LinkedHashMap;
import java.util.Map;

/** A geometry capture: the recorded copies and the complete parameter layout of the engine. */
@Experimental
public record Capture(CaptureResult result, Map<String, ParamSpec> paramLayout) {

  public Capture {
    paramLayout = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(paramLayout));
  }
}
