package dev.mx.refit.guice;

import com.google.inject.AbstractModule;
import com.google.inject.Provides;
import com.google.inject.Singleton;
import com.google.inject.multibindings.OptionalBinder;
import dev.mx.api.plan.PlanBuilder;
import dev.mx.api.plan.PlanBuilderProvider;
import dev.mx.api.refit.GeometrySource;
import dev.mx.api.refit.Installer;
import dev.mx.api.refit.WirePolicy;
import dev.mx.api.spi.ProviderRegistry;
import dev.mx.api.transport.Transport;
import dev.mx.api.util.Settings;
import dev.mx.refit.Receiver;
import dev.mx.refit.ReceiverConfig;
import dev.mx.refit.RefitRecords;
import dev.mx.refit.SourceDiscovery;
import jakarta.inject.Provider;

/**
 * Binds a {@link Receiver} from its configuration, installing the wire-policy module that {@code
 * mx.receiver.wire} selects. The integrator binds {@link Transport}, {@link SourceDiscovery},
 * {@link GeometrySource} and {@link Installer}; it may override {@link RefitRecords} with {@code
 * OptionalBinder.newOptionalBinder(binder, RefitRecords.class).setBinding()}, or the policy with
 * {@code Modules.override}. Nothing native happens here: the receiver allocates on its first refit,
 * and closing it is the caller's job.
 */
public final class ReceiverModule extends AbstractModule {
  private final ReceiverConfig config;
  private final Settings settings;
  private final com.google.inject.Module wireModule;

  public ReceiverModule(ReceiverConfig config) {
    this(config, Settings.system());
  }

  /**
   * @throws IllegalArgumentException when {@code mx.receiver.wire} names no usable policy (checked
   *     here, so the error is not buried in an injector-creation report)
   */
  public ReceiverModule(ReceiverConfig config, Settings settings) {
    this.config = config;
    this.settings = settings;
    this.wireModule = WireModules.forConfig(config);
  }

  @Override
  protected void configure() {
    bind(ReceiverConfig.class).toInstance(config);
    bind(Settings.class).toInstance(settings);
    OptionalBinder.newOptionalBinder(binder(), RefitRecords.class)
        .setDefault()
        .toInstance(RefitRecords.logging());
    install(wireModule);
  }

  /**
   * The best planner on the class path ({@code -Dmx.planner=NAME} or {@code MX_PLANNER} to choose).
   */
  @Provides
  @Singleton
  PlanBuilder planBuilder(Settings s) {
    return ProviderRegistry.load(
            PlanBuilderProvider.class, "planner", "mx.planner", "MX_PLANNER", s)
        .select()
        .create();
  }

  @Provides
  @Singleton
  Receiver receiver(
      ReceiverConfig c,
      Settings s,
      Transport transport,
      SourceDiscovery discovery,
      GeometrySource geometry,
      Installer installer,
      PlanBuilder planner,
      Provider<WirePolicy> policy,
      RefitRecords records) {
    return Receiver.builder()
        .config(c)
        .settings(s)
        .transport(transport)
        .discovery(discovery)
        .geometry(geometry)
        .installer(installer)
        .planner(planner)
        .wirePolicy(policy::get)
        .records(records)
        .build();
  }
}
