package dev.mx.api.transport;

import dev.mx.api.util.Settings;

/**
 * What moving bytes costs on one transport, for the planner's cost model (shard bounding): a fixed
 * cost per read descriptor, the wire bandwidth, and the bandwidth of the receiver's local re-slice
 * copy. A plan option costs {@code descriptors · descriptorSeconds + wireBytes / wireBytesPerSecond
 * + resliceBytes / copyBytesPerSecond}.
 *
 * <p>Settings override a transport's declaration (system property wins over the environment):
 * {@code -Dmx.plan.cost.descriptor-us} / {@code MX_PLAN_COST_DESCRIPTOR_US} (microseconds per
 * descriptor), {@code -Dmx.plan.cost.wire-gbps} / {@code MX_PLAN_COST_WIRE_GBPS} and {@code
 * -Dmx.plan.cost.copy-gbps} / {@code MX_PLAN_COST_COPY_GBPS} (10^9 bytes per second). Values that
 * are not positive and finite fail naming the setting.
 */
public record TransportCosts(
    double descriptorSeconds, double wireBytesPerSecond, double copyBytesPerSecond) {
  public static final String DESCRIPTOR_US_PROPERTY = "mx.plan.cost.descriptor-us";
  public static final String DESCRIPTOR_US_ENV = "MX_PLAN_COST_DESCRIPTOR_US";
  public static final String WIRE_GBPS_PROPERTY = "mx.plan.cost.wire-gbps";
  public static final String WIRE_GBPS_ENV = "MX_PLAN_COST_WIRE_GBPS";
  public static final String COPY_GBPS_PROPERTY = "mx.plan.cost.copy-gbps";
  public static final String COPY_GBPS_ENV = "MX_PLAN_COST_COPY_GBPS";

  /**
   * A one-sided RDMA transport in general (NIXL's published curve: about 0.7 GB/s at 1 KiB
   * descriptors, i.e. ~1.5 µs each, and 24 GB/s at 256 KiB), with a 10 GB/s local copy.
   */
  public static final TransportCosts DEFAULT = new TransportCosts(1.5e-6, 24e9, 10e9);

  public TransportCosts {
    require(
        descriptorSeconds >= 0 && Double.isFinite(descriptorSeconds),
        "descriptor cost",
        descriptorSeconds);
    require(
        wireBytesPerSecond > 0 && Double.isFinite(wireBytesPerSecond),
        "wire bandwidth",
        wireBytesPerSecond);
    require(
        copyBytesPerSecond > 0 && Double.isFinite(copyBytesPerSecond),
        "copy bandwidth",
        copyBytesPerSecond);
  }

  private static void require(boolean ok, String what, double v) {
    if (!ok) {
      throw new IllegalArgumentException(
          "transport costs: " + what + " " + v + " must be finite and positive");
    }
  }

  /** Seconds an option is expected to take. */
  public double seconds(long descriptors, long wireBytes, long resliceBytes) {
    return descriptors * descriptorSeconds
        + wireBytes / wireBytesPerSecond
        + resliceBytes / copyBytesPerSecond;
  }

  /** These costs with every {@code mx.plan.cost.*} setting present in {@code settings} applied. */
  public TransportCosts withOverrides(Settings settings) {
    double d =
        settings.positiveFinite(DESCRIPTOR_US_PROPERTY, DESCRIPTOR_US_ENV, descriptorSeconds * 1e6)
            / 1e6;
    double w =
        settings.positiveFinite(WIRE_GBPS_PROPERTY, WIRE_GBPS_ENV, wireBytesPerSecond / 1e9) * 1e9;
    double c =
        settings.positiveFinite(COPY_GBPS_PROPERTY, COPY_GBPS_ENV, copyBytesPerSecond / 1e9) * 1e9;
    return new TransportCosts(d, w, c);
  }

  @Override
  public String toString() {
    return String.format(
        java.util.Locale.ROOT,
        "%.3g us/descriptor, wire %.3g GB/s, copy %.3g GB/s",
        descriptorSeconds * 1e6,
        wireBytesPerSecond / 1e9,
        copyBytesPerSecond / 1e9);
  }
}
