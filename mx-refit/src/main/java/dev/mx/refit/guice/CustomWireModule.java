package dev.mx.refit.guice;

import com.google.inject.AbstractModule;
import com.google.inject.Singleton;
import dev.mx.api.annotation.Stable;
import dev.mx.api.refit.WirePolicy;

/**
 * Binds {@link WirePolicy} to an integrator's class (public no-argument or {@code @Inject}
 * constructor).
 */
@Stable
public final class CustomWireModule extends AbstractModule {
  private final Class<? extends WirePolicy> policy;

  public CustomWireModule(Class<? extends WirePolicy> policy) {
    this.policy = policy;
  }

  @Override
  protected void configure() {
    bind(policy).in(Singleton.class);
    bind(WirePolicy.class).to(policy);
  }
}
