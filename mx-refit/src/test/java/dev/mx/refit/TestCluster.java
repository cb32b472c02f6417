package dev.mx.refit;

import dev.mx.api.DType;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.refit.cast.Casts;
import dev.mx.transport.mem.MemTransportProvider;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Real publishers for tests: one {@code mem} transport per session serving registered native
 * tensors, and a receiver-side {@code mem} transport wrapped in a {@link RecordingTransport}.
 */
final class TestCluster implements AutoCloseable {
  private final Arena arena = Arena.ofShared();
  private final Map<String, Transport> publishers = new LinkedHashMap<>();
  final RecordingTransport receiver =
      new RecordingTransport(new MemTransportProvider().create(TransportConfig.of("recv")));

  private Transport publisher(String session) {
    return publishers.computeIfAbsent(
        session, s -> new MemTransportProvider().create(TransportConfig.of(s)));
  }

  /**
   * A registered tensor of {@code dtype} in {@code session} holding {@code values} (rounded to the
   * dtype).
   */
  MemorySegment tensor(String session, DType dtype, float... values) {
    MemorySegment seg = arena.allocate((long) values.length * dtype.elementSize(), 64);
    for (int i = 0; i < values.length; i++) {
      long bits =
          Casts.convertBits(Float.floatToRawIntBits(values[i]) & 0xFFFF_FFFFL, DType.F32, dtype);
      switch (dtype.elementSize()) {
        case 1 -> seg.set(ValueLayout.JAVA_BYTE, i, (byte) bits);
        case 2 -> seg.set(ValueLayout.JAVA_SHORT_UNALIGNED, 2L * i, (short) bits);
        case 4 -> seg.set(ValueLayout.JAVA_INT_UNALIGNED, 4L * i, (int) bits);
        default -> seg.set(ValueLayout.JAVA_LONG_UNALIGNED, 8L * i, bits);
      }
    }
    publisher(session).register(seg);
    return seg;
  }

  /** {@code start, start+1, ...} as floats. */
  static float[] arange(int start, int end) {
    float[] v = new float[end - start];
    for (int i = 0; i < v.length; i++) {
      v[i] = start + i;
    }
    return v;
  }

  /** Peer metadata of every publisher, by session. */
  Map<String, byte[]> peerMetadata() {
    Map<String, byte[]> m = new LinkedHashMap<>();
    publishers.forEach((s, t) -> m.put(s, t.localMetadata()));
    return m;
  }

  @Override
  public void close() {
    dev.mx.api.util.Closeables.closeAll(
        receiver, () -> publishers.values().forEach(Transport::close), arena);
  }
}
