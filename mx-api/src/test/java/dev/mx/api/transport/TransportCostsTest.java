package dev.mx.api.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.util.Settings;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * {@link TransportCosts}: the cost formula, the settings that override a transport's declaration.
 */
class TransportCostsTest {

  @Test
  void secondsAreDescriptorsPlusWirePlusReslice() {
    TransportCosts c = new TransportCosts(1e-6, 1e9, 2e9);
    assertEquals(10e-6 + 1.0 + 0.5, c.seconds(10, 1_000_000_000L, 1_000_000_000L), 1e-12);
    assertThrows(IllegalArgumentException.class, () -> new TransportCosts(1e-6, 0, 1e9));
    assertThrows(IllegalArgumentException.class, () -> new TransportCosts(Double.NaN, 1e9, 1e9));
  }

  @Test
  void settingsOverrideEachCostAndRejectGarbageNamingTheSetting() {
    TransportCosts base = new TransportCosts(2e-6, 4e9, 8e9);
    assertEquals(base, base.withOverrides(Settings.of(Map.of(), Map.of())));
    TransportCosts all =
        base.withOverrides(
            Settings.of(
                Map.of("mx.plan.cost.descriptor-us", "0.25", "mx.plan.cost.wire-gbps", "100"),
                Map.of("MX_PLAN_COST_COPY_GBPS", "20", "MX_PLAN_COST_WIRE_GBPS", "1")));
    assertEquals(0.25e-6, all.descriptorSeconds(), 1e-15);
    assertEquals(100e9, all.wireBytesPerSecond(), 1);
    assertEquals(20e9, all.copyBytesPerSecond(), 1);
    for (String bad : new String[] {"-3", "fast"}) {
      IllegalArgumentException e =
          assertThrows(
              IllegalArgumentException.class,
              () ->
                  base.withOverrides(Settings.of(Map.of(), Map.of("MX_PLAN_COST_WIRE_GBPS", bad))));
      assertTrue(e.getMessage().startsWith("MX_PLAN_COST_WIRE_GBPS='" + bad + "'"), e.getMessage());
    }
  }

  @Test
  void transportsDeclareTheDefaultUnlessTheyOverride() {
    // a test double: a proxy Transport that only runs default methods
    Transport t =
        java.lang.reflect.Proxy.newProxyInstance(
                    Transport.class.getClassLoader(),
                    new Class<?>[] {Transport.class},
                    (proxy, m, args) ->
                        m.isDefault()
                            ? java.lang.reflect.InvocationHandler.invokeDefault(proxy, m, args)
                            : null)
                instanceof Transport x
            ? x
            : null;
    assertEquals(TransportCosts.DEFAULT, t.costs());
  }
}
