package dev.mx.refit;

import dev.mx.api.memory.MemoryOps;
import dev.mx.api.memory.MemoryOpsProvider;
import dev.mx.api.transport.MemoryKind;

/**
 * Test double: a {@link MemoryOpsProvider} found through {@code META-INF/services} of the test
 * classes, serving {@code cuda:0} and {@code cuda:1} with one shared {@link HostBackedDeviceOps}
 * each, so tests can prove the receiver looks device operations up by memory kind.
 */
public final class HostBackedDeviceOpsProvider extends MemoryOpsProvider {
  static final HostBackedDeviceOps CUDA0 = new HostBackedDeviceOps(MemoryKind.device(0));
  static final HostBackedDeviceOps CUDA1 = new HostBackedDeviceOps(MemoryKind.device(1));

  @Override
  public String name() {
    return "host-backed-test-double";
  }

  @Override
  public boolean isAvailable() {
    return true;
  }

  @Override
  public boolean serves(MemoryKind kind) {
    return kind.isDevice() && kind.ordinal() <= 1;
  }

  @Override
  public MemoryOps ops(MemoryKind kind) {
    return kind.ordinal() == 0 ? CUDA0 : CUDA1;
  }
}
