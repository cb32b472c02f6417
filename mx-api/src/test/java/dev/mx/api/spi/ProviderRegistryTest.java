package dev.mx.api.spi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.error.NoProviderException;
import dev.mx.api.util.Settings;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ProviderRegistryTest {

  /** A named test double of a provider. */
  static class FakeProvider extends MxProvider {
    final String name;
    final int priority;
    final Throwable cause;

    FakeProvider(String name, int priority, Throwable cause) {
      this.name = name;
      this.priority = priority;
      this.cause = cause;
    }

    @Override
    public String name() {
      return name;
    }

    @Override
    public boolean isAvailable() {
      return cause == null;
    }

    @Override
    public Throwable unavailabilityCause() {
      return cause;
    }

    @Override
    public int priority() {
      return priority;
    }
  }

  private static final FakeProvider MEM = new FakeProvider("mem", 0, null);
  private static final FakeProvider UCX = new FakeProvider("ucx", 8, null);
  private static final FakeProvider TCP = new FakeProvider("tcp", 5, null);
  private static final FakeProvider NIXL =
      new FakeProvider(
          "nixl", 9, new UnsatisfiedLinkError("libnixl_capi.so: cannot open shared object file"));

  private static ProviderRegistry<FakeProvider> registry(
      Map<String, String> props, Map<String, String> env) {
    return ProviderRegistry.of(
        FakeProvider.class,
        "transport",
        "mx.transport",
        "MX_TRANSPORT",
        Settings.of(props, env),
        List.of(MEM, TCP, NIXL, UCX));
  }

  @Test
  void ordersByPriorityThenNameAndPicksTheBestAvailable() {
    ProviderRegistry<FakeProvider> r = registry(Map.of(), Map.of());
    assertEquals(List.of(NIXL, UCX, TCP, MEM), r.providers());
    assertEquals(List.of(UCX, TCP, MEM), r.available());
    assertSame(UCX, r.select());
  }

  @Test
  void equalPrioritiesAreOrderedByName() {
    FakeProvider b = new FakeProvider("beta", 5, null);
    FakeProvider a = new FakeProvider("alpha", 5, null);
    ProviderRegistry<FakeProvider> r =
        ProviderRegistry.of(
            FakeProvider.class,
            "transport",
            "p",
            "E",
            Settings.of(Map.of(), Map.of()),
            List.of(b, a));
    assertEquals(List.of(a, b), r.providers());
  }

  @Test
  void systemPropertyOverridesTheChoice() {
    assertSame(MEM, registry(Map.of("mx.transport", "mem"), Map.of()).select());
  }

  @Test
  void environmentOverridesWhenNoPropertyIsSet() {
    assertSame(TCP, registry(Map.of(), Map.of("MX_TRANSPORT", "tcp")).select());
    // The property wins over the environment.
    assertSame(
        MEM, registry(Map.of("mx.transport", "mem"), Map.of("MX_TRANSPORT", "tcp")).select());
  }

  @Test
  void autoMeansNoOverride() {
    assertSame(UCX, registry(Map.of(), Map.of("MX_TRANSPORT", "auto")).select());
  }

  @Test
  void unknownNameListsEveryProviderAndWhyUnavailable() {
    NoProviderException e =
        assertThrows(
            NoProviderException.class,
            () -> registry(Map.of(), Map.of("MX_TRANSPORT", "rdma")).select());
    String m = e.getMessage();
    assertTrue(m.contains("unknown transport 'rdma' (from MX_TRANSPORT)"), m);
    for (String name : List.of("mem", "ucx", "tcp", "nixl")) {
      assertTrue(m.contains(name + " (priority"), "lists " + name + ": " + m);
    }
    assertTrue(
        m.contains("nixl (priority 9, unavailable: UnsatisfiedLinkError: libnixl_capi.so"), m);
  }

  @Test
  void requestingAnUnavailableProviderReportsItsCause() {
    NoProviderException e =
        assertThrows(
            NoProviderException.class,
            () -> registry(Map.of("mx.transport", "nixl"), Map.of()).select());
    assertTrue(
        e.getMessage().contains("'nixl' was requested but is unavailable: UnsatisfiedLinkError"),
        e.getMessage());
    assertSame(NIXL.cause, e.getCause());
  }

  @Test
  void noAvailableProviderNamesTheArtifactToAdd() {
    ProviderRegistry<FakeProvider> r =
        ProviderRegistry.of(
            FakeProvider.class,
            "transport",
            "mx.transport",
            "MX_TRANSPORT",
            Settings.of(Map.of(), Map.of()),
            List.of(NIXL));
    NoProviderException e = assertThrows(NoProviderException.class, r::select);
    assertTrue(e.getMessage().contains("no transport provider is available"), e.getMessage());
    assertTrue(e.getMessage().contains("dev.mx:mx-nixl"), e.getMessage());
  }

  @Test
  void providersCanBeRegisteredAndDeregisteredByHand() {
    ProviderRegistry<FakeProvider> r = registry(Map.of(), Map.of());
    FakeProvider custom = new FakeProvider("custom", 10, null);
    r.register(custom);
    assertSame(custom, r.select());
    r.deregister(custom);
    assertSame(UCX, r.select());
  }

  @Test
  void aProviderThatThrowsFromIsAvailableCountsAsUnavailable() {
    FakeProvider broken =
        new FakeProvider("broken", 10, null) {
          @Override
          public boolean isAvailable() {
            throw new IllegalStateException("boom");
          }
        };
    ProviderRegistry<FakeProvider> r =
        ProviderRegistry.of(
            FakeProvider.class,
            "transport",
            "p",
            "E",
            Settings.of(Map.of(), Map.of()),
            List.of(broken, MEM));
    assertSame(MEM, r.select());
  }

  @Test
  void serviceLoaderFindsNothingForAnUnusedType() {
    ProviderRegistry<FakeProvider> r =
        ProviderRegistry.load(FakeProvider.class, "fake", "mx.fake", "MX_FAKE");
    assertTrue(r.providers().isEmpty());
    assertTrue(
        assertThrows(NoProviderException.class, r::select)
            .getMessage()
            .contains("No fake providers were found"));
  }
}
