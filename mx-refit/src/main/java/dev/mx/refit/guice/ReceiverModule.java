package dev.mx.refit.guice;

import com.google.inject.AbstractModule;
import com.google.inject.Provides;
import com.google.inject.Singleton;
import com.google.inject.multibindings.OptionalBinder;
import dev.mx.api.annotation.Stable;
import dev.mx.api.plan.PlanBuilder;
import dev.mx.api.refit.GeometrySource;
import dev.mx.api.refit.Installer;
import dev.mx.api.transport.Transport;
import dev.mx.api.util.Settings;
import dev.mx.refit.Receiver;
import dev.mx.refit.ReceiverAssembly;
import dev.mx.refit.ReceiverConfig;
import dev.mx.refit.ReceiverContext;
import dev.mx.refit.RefitRecords;
import dev.mx.refit.SourceDiscovery;
import java.util.Objects;

/**
 * Binds a {@link Receiver} from its concluded {@link ReceiverContext}, installing the wire-policy
 * module that {@code mx.receiver.wire} selects and {@link ReceiverAssembly}. The integrator binds
 * {@link Transport}, {@link SourceDiscovery}, {@link GeometrySource} and {@link Installer}; it may
 * bind an {@code InPlaceTarget} ({@code OptionalBinder}) and listeners ({@code Multibinder}),
 * override {@link RefitRecords} with {@code OptionalBinder.newOptionalBinder(binder,
 * RefitRecords.class).setBinding()}, or the policy with {@code Modules.override}. The planner is
 * the best one on the class path ({@code -Dmx.planner=NAME} or {@code MX_PLANNER} to choose).
 * Nothing native happens here: the receiver allocates on its first refit, and closing it is the
 * caller's job. {@link Receiver.Builder#build()} builds through {@link ReceiverAssembly} too.
 */
@Stable
public final class ReceiverModule extends AbstractModule {
  private final ReceiverContext context;
  private final com.google.inject.Module wireModule;

  /** {@code config} concluded with the system properties and the environment. */
  public ReceiverModule(ReceiverConfig config) {
    this(ReceiverContext.conclude(config, false));
  }

  /** {@code config} concluded with {@code settings}. */
  public ReceiverModule(ReceiverConfig config, Settings settings) {
    this(ReceiverContext.conclude(config, settings, false));
  }

  /**
   * @throws IllegalArgumentException when {@code mx.receiver.wire} names no usable policy (checked
   *     here, so the error is not buried in an injector-creation report)
   */
  public ReceiverModule(ReceiverContext context) {
    this.context = Objects.requireNonNull(context, "context");
    this.wireModule = WireModules.forConfig(context.config());
  }

  @Override
  protected void configure() {
    bind(ReceiverContext.class).toInstance(context);
    bind(ReceiverConfig.class).toInstance(context.config());
    OptionalBinder.newOptionalBinder(binder(), RefitRecords.class)
        .setDefault()
        .toInstance(RefitRecords.logging());
    install(wireModule);
    install(new ReceiverAssembly());
  }

  /** The best planner on the class path, as the context's settings choose it. */
  @Provides
  @Singleton
  PlanBuilder planBuilder(ReceiverContext c) {
    return c.classPathPlanner();
  }
}
