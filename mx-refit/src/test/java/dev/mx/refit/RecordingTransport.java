package dev.mx.refit;

import dev.mx.api.error.TransportException;
import dev.mx.api.transport.MemoryRegistration;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.api.transport.Transport;
import dev.mx.testing.ForwardingTransport;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * Test double: the real {@code mem} transport underneath (real byte moves), plus the batch
 * boundaries so ordering can be asserted, and a switch that fails the next read before any byte
 * moves.
 */
final class RecordingTransport extends ForwardingTransport {
  final List<Integer> batchSizes = new ArrayList<>();
  final List<Integer> installedAfter = new ArrayList<>();
  private int failNextReads;

  /**
   * Whether this double accepts device-kind registrations (its memory is host memory underneath).
   */
  boolean readsDevice;

  final List<dev.mx.api.transport.MemoryKind> registeredKinds = new ArrayList<>();

  RecordingTransport(Transport delegate) {
    super(delegate);
  }

  /** Makes the next {@code n} reads throw a transport error without moving anything. */
  void failNextReads(int n) {
    failNextReads = n;
  }

  /** Called by the test installer: how many batches ran before install. */
  void markInstall() {
    installedAfter.add(batchSizes.size());
  }

  @Override
  public void read(List<ReadDescriptor> batch, Duration timeout) {
    batchSizes.add(batch.size());
    if (failNextReads > 0) {
      failNextReads--;
      throw new TransportException("s0", "injected wire failure (test double)");
    }
    delegate.read(batch, timeout);
  }

  @Override
  public MemoryRegistration register(MemorySegment region) {
    registeredKinds.add(dev.mx.api.transport.MemoryKind.HOST);
    return delegate.register(region);
  }

  @Override
  public boolean supportsMemory(dev.mx.api.transport.MemoryKind kind) {
    return readsDevice || delegate.supportsMemory(kind);
  }

  /**
   * Device kinds (when {@link #readsDevice}) go to the mem transport as the host memory they really
   * are.
   */
  @Override
  public MemoryRegistration register(MemorySegment region, dev.mx.api.transport.MemoryKind kind) {
    if (kind.isDevice() && readsDevice) {
      registeredKinds.add(kind);
      return delegate.register(region);
    }
    return delegate.register(region, kind);
  }
}
