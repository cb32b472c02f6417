package dev.mx.refit.wire;

import dev.mx.api.annotation.Stable;
import dev.mx.api.refit.WireGroups;
import dev.mx.api.refit.WirePolicy;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.api.transport.Transport;
import dev.mx.refit.jfr.StageClock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Issues exact ++ full-pull ++ convert reads as one transport batch. Safe because the three groups
 * target disjoint destinations and nothing reads those destinations until the whole batch
 * completed.
 */
@Stable
public final class FusedWire implements WirePolicy {

  @Override
  public String name() {
    return "fused";
  }

  @Override
  public Map<String, Double> transfer(Transport transport, WireGroups groups, Duration timeout) {
    List<ReadDescriptor> all =
        new ArrayList<>(groups.exact().size() + groups.full().size() + groups.convert().size());
    all.addAll(groups.exact());
    all.addAll(groups.full());
    all.addAll(groups.convert());
    if (all.isEmpty()) {
      // Still the fused stage, so the stage record tells a fused wire that read nothing.
      return Map.of(WireStages.FUSED, 0.0);
    }
    StageClock clock = StageClock.start(WireStages.FUSED);
    transport.read(all, timeout);
    return Map.of(WireStages.FUSED, clock.stop());
  }

  @Override
  public String toString() {
    return "FusedWire";
  }
}
