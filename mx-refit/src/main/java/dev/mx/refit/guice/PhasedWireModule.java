package dev.mx.refit.guice;

import com.google.inject.AbstractModule;
import com.google.inject.Singleton;
import dev.mx.api.annotation.Stable;
import dev.mx.api.refit.WirePolicy;
import dev.mx.refit.wire.PhasedWire;

/** Binds {@link WirePolicy} to {@link PhasedWire}: up to three batches, one per non-empty group. */
@Stable
public final class PhasedWireModule extends AbstractModule {
  @Override
  protected void configure() {
    bind(PhasedWire.class).in(Singleton.class);
    bind(WirePolicy.class).to(PhasedWire.class);
  }
}
