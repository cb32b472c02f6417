package dev.mx.refit;

import dev.mx.api.refit.Installer;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Test double: snapshots the bytes of every installed buffer (as the engine would see them at
 * install) and tells the recording transport when it ran.
 */
final class RecordingInstaller implements Installer {
  final List<String> order = new ArrayList<>();
  final List<Long> steps = new ArrayList<>();
  final List<Map<String, MemorySegment>> handed = new ArrayList<>();
  Map<String, byte[]> last = Map.of();
  private final RecordingTransport transport;

  RecordingInstaller(RecordingTransport transport) {
    this.transport = transport;
  }

  @Override
  public void install(long step, Map<String, MemorySegment> receiveBuffers) {
    order.add("install");
    steps.add(step);
    handed.add(receiveBuffers);
    if (transport != null) {
      transport.markInstall();
    }
    Map<String, byte[]> snap = new LinkedHashMap<>();
    receiveBuffers.forEach((k, v) -> snap.put(k, v.toArray(ValueLayout.JAVA_BYTE)));
    last = snap;
  }

  float[] floats(String param) {
    return MemorySegment.ofArray(last.get(param)).toArray(ValueLayout.JAVA_FLOAT_UNALIGNED);
  }
}
