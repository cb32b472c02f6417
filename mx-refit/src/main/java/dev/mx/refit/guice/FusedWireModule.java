package dev.mx.refit.guice;

import com.google.inject.AbstractModule;
import com.google.inject.Singleton;
import dev.mx.api.annotation.Stable;
import dev.mx.api.refit.WirePolicy;
import dev.mx.refit.wire.FusedWire;

/**
 * Binds {@link WirePolicy} to {@link FusedWire}: exact, full-pull and convert reads in one batch.
 */
@Stable
public final class FusedWireModule extends AbstractModule {
  @Override
  protected void configure() {
    bind(FusedWire.class).in(Singleton.class);
    bind(WirePolicy.class).to(FusedWire.class);
  }
}
