package dev.mx.refit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.inject.AbstractModule;
import com.google.inject.CreationException;
import com.google.inject.Injector;
import com.google.inject.Module;
import com.google.inject.util.Modules;
import dev.mx.api.plan.PlanBuilder;
import dev.mx.api.refit.GeometrySource;
import dev.mx.api.refit.Installer;
import dev.mx.api.refit.WireGroups;
import dev.mx.api.refit.WirePolicy;
import dev.mx.api.transport.Transport;
import dev.mx.api.util.Settings;
import dev.mx.plan.ReshardPlanner;
import dev.mx.refit.guice.ReceiverModule;
import dev.mx.refit.guice.Receivers;
import dev.mx.refit.wire.FusedWire;
import dev.mx.refit.wire.PhasedWire;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The Guice wiring: policy chosen from configuration, explicit bindings, no native work, custom
 * policies.
 */
class ReceiverModuleTest {
  private static final Settings NONE = Settings.of(Map.of(), Map.of());

  /**
   * An integrator's custom policy: everything in one batch, counting its calls. Public for
   * reflective binding.
   */
  public static final class CountingWire implements WirePolicy {
    static final AtomicInteger CALLS = new AtomicInteger();
    private final FusedWire inner = new FusedWire();

    @Override
    public String name() {
      return "counting";
    }

    @Override
    public Map<String, Double> transfer(Transport transport, WireGroups groups, Duration timeout) {
      CALLS.incrementAndGet();
      return inner.transfer(transport, groups, timeout);
    }
  }

  private static Module integrator(Harness h) {
    return new AbstractModule() {
      @Override
      protected void configure() {
        bind(Transport.class).toInstance(h.cluster.receiver);
        bind(SourceDiscovery.class).toInstance(SourceDiscovery.fixed(h.seed.discovered(h.cluster)));
        bind(GeometrySource.class).toInstance(h.seed.geometry());
        bind(Installer.class).toInstance(h.installer);
      }
    };
  }

  @Test
  void policyComesFromConfigurationOrTheEnvironment() {
    try (Harness h = new Harness()) {
      assertInstanceOf(
          FusedWire.class,
          Receivers.injector(ReceiverConfig.defaults(), NONE, integrator(h))
              .getInstance(WirePolicy.class));
      assertInstanceOf(
          PhasedWire.class,
          Receivers.injector(ReceiverConfig.defaults().withWire("phased"), NONE, integrator(h))
              .getInstance(WirePolicy.class));
      Settings env = Settings.of(Map.of(), Map.of("MX_RESHARD_FUSED_WIRE", "false"));
      assertInstanceOf(
          PhasedWire.class,
          Receivers.injector(ReceiverConfig.fromProperties(Map.of(), env), env, integrator(h))
              .getInstance(WirePolicy.class));
    }
  }

  @Test
  void anInjectedReceiverRefitsWithThePlannerFromTheClassPathAndAllocatesNothingUpFront() {
    try (Harness h = new Harness()) {
      Injector injector =
          Receivers.injector(ReceiverConfig.defaults().withWire("phased"), NONE, integrator(h));
      assertInstanceOf(ReshardPlanner.class, injector.getInstance(PlanBuilder.class));
      Receiver r = injector.getInstance(Receiver.class);
      assertSame(r, injector.getInstance(Receiver.class), "one receiver per injector");
      assertEquals(
          0, r.nativeBytes(), "creating the injector (production stage) did no native work");
      try (r) {
        Map<String, Object> m = r.updateWeights(1);
        assertTrue(m.containsKey("wire_exact_s"), "phased policy from configuration");
        assertArrayEquals(
            new float[] {100, 101, 104, 105, 108, 109, 112, 113}, h.installer.floats("strided"));
      }
    }
  }

  @Test
  void anIntegratorCanBindACustomPolicyByClassNameOrOverride() {
    try (Harness h = new Harness()) {
      CountingWire.CALLS.set(0);
      Injector byName =
          Receivers.injector(
              ReceiverConfig.defaults().withWire(CountingWire.class.getName()),
              NONE,
              integrator(h));
      assertInstanceOf(CountingWire.class, byName.getInstance(WirePolicy.class));
      try (Receiver r = byName.getInstance(Receiver.class)) {
        r.updateWeights(1);
      }
      // Pipelined, the custom policy issues every transport read: one call per peer here.
      int perStep = h.cluster.receiver.batchSizes.size();
      assertEquals(h.cluster.peerMetadata().size(), perStep);
      assertEquals(perStep, CountingWire.CALLS.get());

      WirePolicy custom = new CountingWire();
      Injector overridden =
          com.google.inject.Guice.createInjector(
              com.google.inject.Stage.PRODUCTION,
              Receivers.strictBinder(),
              Modules.override(new ReceiverModule(ReceiverConfig.defaults(), NONE))
                  .with(b -> b.bind(WirePolicy.class).toInstance(custom)),
              integrator(h));
      assertSame(custom, overridden.getInstance(WirePolicy.class));
      try (Receiver r = overridden.getInstance(Receiver.class)) {
        r.updateWeights(2);
      }
      assertEquals(2 * perStep, CountingWire.CALLS.get());
      assertEquals(List.of(1L, 2L), h.installer.steps);
    }
  }

  @Test
  void explicitBindingsAreRequiredAndABadPolicyNameIsNamed() {
    CreationException missing =
        assertThrows(
            CreationException.class, () -> Receivers.injector(ReceiverConfig.defaults(), NONE));
    assertTrue(missing.getMessage().contains("Transport"), missing.getMessage());
    IllegalArgumentException bad =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                Receivers.injector(
                    ReceiverConfig.defaults().withWire("com.example.NoSuchWire"), NONE));
    assertTrue(bad.getMessage().contains("com.example.NoSuchWire"), bad.getMessage());
    IllegalArgumentException notAPolicy =
        assertThrows(
            IllegalArgumentException.class,
            () -> Receivers.injector(ReceiverConfig.defaults().withWire("java.lang.String"), NONE));
    assertTrue(notAPolicy.getMessage().contains("does not implement"), notAPolicy.getMessage());
  }

  @Test
  void listenersBoundInTheInjectorAreToldAndTheBuilderRefusesAsItAlwaysDid() {
    try (Harness h = new Harness()) {
      List<String> heard = new java.util.concurrent.CopyOnWriteArrayList<>();
      dev.mx.api.metrics.RefitListener listener =
          new dev.mx.api.metrics.RefitListener() {
            @Override
            public void installed(Refit refit) {
              heard.add("installed " + refit.step());
            }
          };
      Injector injector =
          Receivers.injector(
              ReceiverConfig.defaults(),
              NONE,
              integrator(h),
              b ->
                  com.google.inject.multibindings.Multibinder.newSetBinder(
                          b, dev.mx.api.metrics.RefitListener.class)
                      .addBinding()
                      .toInstance(listener));
      try (Receiver r = injector.getInstance(Receiver.class)) {
        r.updateWeights(5);
      }
      assertEquals(List.of("installed 5"), heard);
      assertSame(
          injector.getInstance(ReceiverContext.class),
          injector.getInstance(Receiver.class).context(),
          "the receiver runs on the bound context");

      // The builder builds through the same assembly; its refusals stay the receiver's own.
      IllegalStateException strict =
          assertThrows(
              IllegalStateException.class,
              () ->
                  h.builder(Map.of())
                      .config(ReceiverConfig.defaults().withVerify(VerifyMode.STRICT))
                      .build());
      assertTrue(strict.getMessage().contains("strict staged planner"), strict.getMessage());
    }
  }
}
