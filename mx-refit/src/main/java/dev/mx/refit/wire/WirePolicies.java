package dev.mx.refit.wire;

import dev.mx.api.annotation.Stable;
import dev.mx.api.refit.WirePolicy;
import java.lang.reflect.InvocationTargetException;

/**
 * Resolves the {@code mx.receiver.wire} value: {@code fused}, {@code phased}, or a {@link
 * WirePolicy} class name.
 */
@Stable
public final class WirePolicies {
  /** The configuration key, named in errors. */
  private static final String KEY = "mx.receiver.wire";

  private WirePolicies() {}

  /**
   * The policy class for a configuration value.
   *
   * @throws IllegalArgumentException when the value is neither built in nor a {@link WirePolicy}
   *     class
   */
  public static Class<? extends WirePolicy> policyClass(String wire) {
    if (wire.equalsIgnoreCase("fused")) {
      return FusedWire.class;
    }
    if (wire.equalsIgnoreCase("phased")) {
      return PhasedWire.class;
    }
    Class<?> c;
    try {
      ClassLoader loader = Thread.currentThread().getContextClassLoader();
      c = Class.forName(wire, false, loader != null ? loader : WirePolicies.class.getClassLoader());
    } catch (ClassNotFoundException e) {
      throw new IllegalArgumentException(
          KEY + "='" + wire + "' is neither fused, phased nor a class on the class path", e);
    }
    if (!WirePolicy.class.isAssignableFrom(c)) {
      throw new IllegalArgumentException(
          KEY
              + "='"
              + wire
              + "' names a class that does not implement "
              + WirePolicy.class.getName());
    }
    return c.asSubclass(WirePolicy.class);
  }

  /**
   * A new policy for a configuration value (a custom class needs a public no-argument constructor).
   */
  public static WirePolicy create(String wire) {
    Class<? extends WirePolicy> c = policyClass(wire);
    try {
      return c.getConstructor().newInstance();
    } catch (NoSuchMethodException | InstantiationException | IllegalAccessException e) {
      throw new IllegalArgumentException(
          KEY + "='" + wire + "': " + c.getName() + " needs a public no-argument constructor", e);
    } catch (InvocationTargetException e) {
      throw new IllegalArgumentException(
          KEY + "='" + wire + "': constructing " + c.getName() + " failed: " + e.getCause(),
          e.getCause());
    }
  }
}
