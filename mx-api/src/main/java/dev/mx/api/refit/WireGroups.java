package dev.mx.api.refit;

import dev.mx.api.annotation.Experimental;
import dev.mx.api.transport.ReadDescriptor;
import java.util.List;

/**
 * The three groups of reads of one refit: exact segments, full pulls into staging, convert staging.
 */
@Experimental
public record WireGroups(
    List<ReadDescriptor> exact, List<ReadDescriptor> full, List<ReadDescriptor> convert) {

  public WireGroups {
    exact = exact == null ? List.of() : List.copyOf(exact);
    full = List.copyOf(full);
    convert = List.copyOf(convert);
  }
}
