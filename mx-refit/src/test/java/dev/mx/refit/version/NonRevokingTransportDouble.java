package dev.mx.refit.version;

import dev.mx.api.transport.MemoryKind;
import dev.mx.api.transport.MemoryRegistration;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.api.transport.Transport;
import dev.mx.testing.ForwardingTransport;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Test double: a real {@code mem} transport underneath (real byte moves) that models a real NIXL
 * over shared memory, CMA or TCP: it says it {@link #revokesDeregisteredMemory() cannot revoke},
 * and closing a registration only counts the deregistration while the memory stays readable until
 * the double itself closes. Built with {@code revokes = true} it passes deregistration through and
 * says it revokes, as the other backends do. It counts registrations and deregistrations and can
 * run a hook once, right after the reads of the next read call (to act between a receiver's reads
 * and its install).
 */
final class NonRevokingTransportDouble extends ForwardingTransport {
  private final boolean revokes;
  private final List<MemoryRegistration> kept = new ArrayList<>();
  private final AtomicInteger registered = new AtomicInteger();
  private final AtomicInteger deregistered = new AtomicInteger();
  private final AtomicReference<Runnable> afterNextRead = new AtomicReference<>();

  NonRevokingTransportDouble(Transport delegate, boolean revokes) {
    super(delegate);
    this.revokes = revokes;
  }

  /** Runs {@code hook} once, after the reads of the next {@link #read} call. */
  void afterNextRead(Runnable hook) {
    afterNextRead.set(hook);
  }

  /** Registrations made so far. */
  int registrations() {
    return registered.get();
  }

  /** Registrations closed so far (each counted once). */
  int deregistrations() {
    return deregistered.get();
  }

  @Override
  public boolean revokesDeregisteredMemory() {
    return revokes;
  }

  @Override
  public MemoryRegistration register(MemorySegment region) {
    MemoryRegistration real = delegate.register(region);
    registered.incrementAndGet();
    if (!revokes) {
      synchronized (kept) {
        kept.add(real);
      }
    }
    AtomicBoolean closed = new AtomicBoolean();
    return new MemoryRegistration() {
      @Override
      public MemorySegment segment() {
        return real.segment();
      }

      @Override
      public void close() {
        if (closed.compareAndSet(false, true)) {
          deregistered.incrementAndGet();
          if (revokes) {
            real.close();
          }
        }
      }
    };
  }

  @Override
  public MemoryRegistration register(MemorySegment region, MemoryKind kind) {
    if (!supportsMemory(kind)) {
      return delegate.register(region, kind); // throws, naming the kind
    }
    return register(region);
  }

  @Override
  public void read(List<ReadDescriptor> batch, Duration timeout) {
    delegate.read(batch, timeout);
    Runnable hook = afterNextRead.getAndSet(null);
    if (hook != null) {
      hook.run();
    }
  }

  /** Really deregisters what was kept readable, then closes the real transport. */
  @Override
  public void close() {
    synchronized (kept) {
      for (int i = kept.size() - 1; i >= 0; i--) {
        kept.get(i).close();
      }
      kept.clear();
    }
    delegate.close();
  }
}
