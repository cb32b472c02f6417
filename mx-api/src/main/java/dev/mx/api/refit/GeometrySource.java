package dev.mx.api.refit;

import dev.mx.api.annotation.Experimental;
import java.util.List;

/**
 * Learns, without moving bytes, which slice of each global source tensor the engine reads and where
 * it writes it (ModelExpress; ARCHITECTURE §7.3, §7.6).
 */
@Experimental("geometry capture is still growing with new engines")
public interface GeometrySource {

  Capture capture(List<ManifestEntry> manifest);
}
