package dev.mx.refit.guice;

import com.google.inject.AbstractModule;
import com.google.inject.Guice;
import com.google.inject.Injector;
import com.google.inject.Module;
import com.google.inject.Stage;
import dev.mx.api.annotation.Stable;
import dev.mx.api.util.Settings;
import dev.mx.refit.ReceiverConfig;
import java.util.ArrayList;
import java.util.List;

/** Builds receiver injectors the strict way: production stage, explicit bindings only. */
@Stable
public final class Receivers {
  private Receivers() {}

  /**
   * Binder options every mx injector uses: explicit bindings, no circular proxies, exact
   * annotations.
   */
  public static Module strictBinder() {
    return new AbstractModule() {
      @Override
      protected void configure() {
        binder().requireExplicitBindings();
        binder().disableCircularProxies();
        binder().requireExactBindingAnnotations();
      }
    };
  }

  /**
   * An injector in {@link Stage#PRODUCTION} holding {@link ReceiverModule} for {@code config} plus
   * the integrator's modules (which bind the transport, discovery, geometry source and installer).
   */
  public static Injector injector(
      ReceiverConfig config, Settings settings, Module... integratorModules) {
    List<Module> modules = new ArrayList<>();
    modules.add(strictBinder());
    modules.add(new ReceiverModule(config, settings));
    modules.addAll(List.of(integratorModules));
    return Guice.createInjector(Stage.PRODUCTION, modules);
  }
}
