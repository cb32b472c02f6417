package dev.mx.api.plan;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What a geometry source recorded: the copies, the sources it could not express (with reasons), and
 * the number of copy sinks that fired without an active parameter.
 */
public record CaptureResult(
    List<RecordedCopy> copies,
    List<String> unsupported,
    int unattributed,
    Map<String, String> unsupportedReasons) {

  public CaptureResult {
    copies = List.copyOf(copies);
    unsupported = List.copyOf(unsupported);
    unsupportedReasons =
        java.util.Collections.unmodifiableMap(new LinkedHashMap<>(unsupportedReasons));
    if (unattributed < 0) {
      throw new IllegalArgumentException("unattributed " + unattributed + " is negative");
    }
  }

  /** A capture with copies only. */
  public static CaptureResult of(List<RecordedCopy> copies) {
    return new CaptureResult(copies, List.of(), 0, Map.of());
  }
}
