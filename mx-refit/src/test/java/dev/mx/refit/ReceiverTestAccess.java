package dev.mx.refit;

import dev.mx.api.DType;
import dev.mx.api.plan.SourceInfo;
import dev.mx.api.plan.TransferPlan;
import java.lang.foreign.MemorySegment;
import java.util.Map;

/**
 * Opens the package-private test fixtures ({@link Harness}, {@link SeedScenario}) to tests in
 * sub-packages.
 */
public final class ReceiverTestAccess {
  private ReceiverTestAccess() {}

  /** An opaque harness handle. */
  public static final class Handle implements AutoCloseable {
    final Harness harness = new Harness();

    @Override
    public void close() {
      harness.close();
    }
  }

  public static boolean sameGeometry(Map<String, SourceInfo> a, Map<String, SourceInfo> b) {
    return Receiver.sameGeometry(a, b);
  }

  public static Handle harness() {
    return new Handle();
  }

  public static Receiver.Builder builder(Handle h) {
    return h.harness.builder(Map.of());
  }

  public static Map<String, SourceInfo> digests(Handle h) {
    return h.harness.seed.withDigests();
  }

  /** The seed's sources as a publisher without digests publishes them. */
  public static DiscoveredSources withoutDigests(Handle h) {
    return h.harness.seed.discoveredWithoutDigests(h.harness.cluster);
  }

  public static Map<String, byte[]> peers(Handle h) {
    return h.harness.cluster.peerMetadata();
  }

  public static MemorySegment source(Handle h, String name) {
    return switch (name) {
      case "exact" -> h.harness.seed.exactSrc;
      case "strided" -> h.harness.seed.stridedSrc;
      default -> h.harness.seed.routerSrc;
    };
  }

  public static MemorySegment tensor(Handle h, String session, DType dtype, float... values) {
    return h.harness.cluster.tensor(session, dtype, values);
  }

  public static TransferPlan seedPlan(Handle h) {
    return h.harness.seed.plan;
  }

  public static int installs(Handle h) {
    return h.harness.installer.order.size();
  }

  public static float[] floats(Handle h, String param) {
    return h.harness.installer.floats(param);
  }
}
