package dev.mx.api.plan;

import dev.mx.api.spi.MxProvider;

/** Supplies a {@link PlanBuilder}; found through {@link java.util.ServiceLoader}. */
public abstract class PlanBuilderProvider extends MxProvider {

  public abstract PlanBuilder create();

  @Override
  public String artifact() {
    return "dev.mx:mx-plan";
  }
}
