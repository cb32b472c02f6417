package dev.mx.api.refit;

import java.util.List;

/**
 * Learns, without moving bytes, which slice of each global source tensor the engine reads and where it
 * writes it (ModelExpress §3.1, §5.2).
 */
public interface GeometrySource {

  Capture capture(List<ManifestEntry> manifest);
}
