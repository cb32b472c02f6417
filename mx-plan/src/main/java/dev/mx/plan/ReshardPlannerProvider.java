package dev.mx.plan;

import dev.mx.api.plan.PlanBuilder;
import dev.mx.api.plan.PlanBuilderProvider;

/** Registers {@link ReshardPlanner} with the provider registry under the name {@code reshard}. */
public final class ReshardPlannerProvider extends PlanBuilderProvider {

  @Override
  public String name() {
    return "reshard";
  }

  @Override
  public boolean isAvailable() {
    return true;
  }

  @Override
  public PlanBuilder create() {
    return new ReshardPlanner();
  }
}
