package dev.mx.refit.wire;

import dev.mx.api.annotation.Stable;
import dev.mx.api.refit.WireGroups;
import dev.mx.api.refit.WirePolicy;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.api.transport.Transport;
import dev.mx.refit.jfr.StageClock;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Issues the exact, full-pull and convert groups as separate batches, in that order, skipping empty
 * groups; a stage time is recorded only for a phase that ran. Useful to attribute wire time per
 * group.
 */
@Stable
public final class PhasedWire implements WirePolicy {

  @Override
  public String name() {
    return "phased";
  }

  @Override
  public Map<String, Double> transfer(Transport transport, WireGroups groups, Duration timeout) {
    Map<String, Double> stages = new LinkedHashMap<>();
    phase(transport, groups.exact(), timeout, WireStages.EXACT, stages);
    phase(transport, groups.full(), timeout, WireStages.FULL, stages);
    phase(transport, groups.convert(), timeout, WireStages.CONVERT, stages);
    return stages;
  }

  private static void phase(
      Transport transport,
      List<ReadDescriptor> group,
      Duration timeout,
      String stage,
      Map<String, Double> stages) {
    if (group.isEmpty()) {
      return;
    }
    StageClock clock = StageClock.start(stage);
    transport.read(group, timeout);
    clock.stopInto(stages);
  }

  @Override
  public String toString() {
    return "PhasedWire";
  }
}
