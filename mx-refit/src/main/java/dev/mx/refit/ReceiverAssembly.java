package dev.mx.refit;

import com.google.inject.AbstractModule;
import com.google.inject.Provides;
import com.google.inject.Singleton;
import com.google.inject.multibindings.Multibinder;
import com.google.inject.multibindings.OptionalBinder;
import dev.mx.api.annotation.Stable;
import dev.mx.api.metrics.RefitListener;
import dev.mx.api.plan.PlanBuilder;
import dev.mx.api.refit.GeometrySource;
import dev.mx.api.refit.InPlaceTarget;
import dev.mx.api.refit.Installer;
import dev.mx.api.refit.WirePolicy;
import dev.mx.api.transport.Transport;
import jakarta.inject.Provider;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * Assembles a {@link Receiver} from what the injector binds: the {@link ReceiverContext}, {@link
 * Transport}, {@link SourceDiscovery}, {@link GeometrySource}, {@link Installer}, {@link
 * PlanBuilder}, {@link WirePolicy} (consulted at every refit) and {@link RefitRecords}; optionally
 * an {@link InPlaceTarget} ({@code OptionalBinder}) and listeners ({@code Multibinder} of {@link
 * RefitListener}, told after the JVM-wide ones). Binds nothing native: the receiver allocates on
 * its first refit, and closing it is the caller's job. {@code dev.mx.refit.guice.ReceiverModule}
 * installs it, and {@link Receiver.Builder#build()} builds through it.
 */
@Stable
public final class ReceiverAssembly extends AbstractModule {

  @Override
  protected void configure() {
    OptionalBinder.newOptionalBinder(binder(), InPlaceTarget.class);
    Multibinder.newSetBinder(binder(), RefitListener.class);
    OptionalBinder.newOptionalBinder(binder(), ReceiverExtras.class)
        .setDefault()
        .toInstance(ReceiverExtras.DEFAULT);
  }

  @Provides
  @Singleton
  Receiver receiver(
      ReceiverContext context,
      Transport transport,
      SourceDiscovery discovery,
      GeometrySource geometry,
      Installer installer,
      PlanBuilder planner,
      Provider<WirePolicy> policy,
      RefitRecords records,
      Optional<InPlaceTarget> inPlace,
      Set<RefitListener> listeners,
      ReceiverExtras extras) {
    return new Receiver(
        context,
        transport,
        discovery,
        geometry,
        installer,
        planner,
        policy::get,
        records,
        inPlace.orElse(null),
        List.copyOf(listeners),
        extras);
  }

  // One receiver per injector: modules of the same class install once.
  @Override
  public boolean equals(Object o) {
    return o instanceof ReceiverAssembly;
  }

  @Override
  public int hashCode() {
    return ReceiverAssembly.class.hashCode();
  }
}
