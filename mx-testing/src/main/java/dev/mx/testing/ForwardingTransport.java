package dev.mx.testing;

import dev.mx.api.transport.MemoryRegistration;
import dev.mx.api.transport.PendingRead;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportStats;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.List;

/**
 * A transport that hands every abstract method of {@link Transport} to a real one: the base of test
 * doubles that observe or perturb a real transport (record batches, fail or halt a read, keep
 * deregistered memory readable) by overriding only what they change. The interface's default
 * methods are not forwarded (but {@link #readAfterExit}, which concerns the peer, not the double),
 * so a double's {@link #register(MemorySegment)} also serves {@link Transport#allocate} and {@link
 * Transport#register(MemorySegment, dev.mx.api.transport.MemoryKind)}.
 */
public class ForwardingTransport implements Transport {
  protected final Transport delegate;

  public ForwardingTransport(Transport delegate) {
    this.delegate = delegate;
  }

  @Override
  public String name() {
    return delegate.name();
  }

  @Override
  public String localSession() {
    return delegate.localSession();
  }

  @Override
  public MemoryRegistration register(MemorySegment region) {
    return delegate.register(region);
  }

  @Override
  public byte[] localMetadata() {
    return delegate.localMetadata();
  }

  @Override
  public void connect(String session, byte[] peerMetadata) {
    delegate.connect(session, peerMetadata);
  }

  @Override
  public boolean isConnected(String session) {
    return delegate.isConnected(session);
  }

  @Override
  public boolean readAfterExit(String session, boolean allowed) {
    return delegate.readAfterExit(session, allowed);
  }

  @Override
  public void read(List<ReadDescriptor> batch, Duration timeout) {
    delegate.read(batch, timeout);
  }

  @Override
  public PendingRead post(String session, List<ReadDescriptor> group) {
    return delegate.post(session, group);
  }

  @Override
  public void awaitAll(List<PendingRead> posted, Duration timeout) {
    delegate.awaitAll(posted, timeout);
  }

  @Override
  public Duration defaultTimeout() {
    return delegate.defaultTimeout();
  }

  @Override
  public TransportStats stats() {
    return delegate.stats();
  }

  @Override
  public boolean isHealthy() {
    return delegate.isHealthy();
  }

  @Override
  public void close() {
    delegate.close();
  }
}
