package dev.mx.transport.kit;

import dev.mx.api.error.TransportException;
import dev.mx.api.spi.ProviderRegistry;
import dev.mx.api.transport.MemoryKind;
import dev.mx.api.transport.MemoryKinds;
import dev.mx.api.transport.MemoryRegistration;
import dev.mx.api.transport.PendingRead;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.api.transport.TransportCosts;
import dev.mx.api.transport.TransportProvider;
import dev.mx.api.transport.TransportStats;
import dev.mx.api.util.Closeables;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One endpoint over several transports at once. A publisher registers its memory with every one of
 * them and publishes a {@link TransportBundle} of their blobs; a receiver routes each peer, at
 * {@link #connect}, to the first of its transports (in preference order, e.g. {@code shm} then
 * {@code ucx}) that accepts the peer's blob for it: {@code shm} accepts only a peer it can prove is
 * on this host, so other peers fall through to {@code ucx}. One batch may then read some peers over
 * shm and others over ucx.
 *
 * <p>A batch spanning several transports posts every peer's group (each backend validates it and
 * moves no data before its await, as ucx and shm do), then awaits them all within one deadline; a
 * failed post drains what was posted and rethrows.
 */
public final class RoutingTransport implements Transport {
  private static final Logger LOG = LoggerFactory.getLogger(RoutingTransport.class);

  private final TransportConfig config;

  /** In preference order. */
  private final List<Transport> transports;

  /** Index of the transport whose blob goes first in the bundle (agent_meta_b64). */
  private final int primary;

  private final Map<String, Transport> routes = new ConcurrentHashMap<>();
  private final AtomicBoolean closed = new AtomicBoolean();

  /**
   * Routes over {@code transports} (preference order, all with {@code config}'s session); {@code
   * primary} indexes the one whose blob single-transport readers get. Takes ownership: closing this
   * closes them.
   */
  public RoutingTransport(TransportConfig config, List<Transport> transports, int primary) {
    if (transports.isEmpty()) {
      throw new IllegalArgumentException("a routing transport needs at least one transport");
    }
    if (primary < 0 || primary >= transports.size()) {
      throw new IllegalArgumentException(
          "primary index " + primary + " out of " + transports.size());
    }
    this.config = config;
    this.transports = List.copyOf(transports);
    this.primary = primary;
  }

  /**
   * The endpoint {@code auto} means: the transport the override ({@code -Dmx.transport}, {@code
   * MX_TRANSPORT}) names, alone; else one endpoint per available transport except the last-resort
   * ones (priority 0), routed per peer, with the best non-{@link TransportProvider#hostLocal
   * host-local} one as primary; a single available transport is returned as itself.
   */
  public static Transport open(TransportConfig config) {
    ProviderRegistry<TransportProvider> registry = TransportProvider.registry();
    String forced = registry.requestedName();
    if (forced != null && !forced.equalsIgnoreCase("auto")) {
      return registry.select(forced).create(config);
    }
    List<TransportProvider> usable = new ArrayList<>();
    for (TransportProvider p : registry.available()) {
      if (p.priority() > 0) {
        usable.add(p);
      }
    }
    if (usable.size() <= 1) {
      return (usable.isEmpty() ? registry.select() : usable.get(0)).create(config);
    }
    List<Transport> opened = new ArrayList<>(usable.size());
    int primary = -1;
    try {
      for (TransportProvider p : usable) {
        if (primary < 0 && !p.hostLocal()) {
          primary = opened.size();
        }
        opened.add(p.create(config));
      }
    } catch (RuntimeException | Error e) {
      for (int i = opened.size() - 1; i >= 0; i--) {
        try {
          opened.get(i).close();
        } catch (RuntimeException suppressed) {
          e.addSuppressed(suppressed);
        }
      }
      throw e;
    }
    return new RoutingTransport(config, opened, Math.max(0, primary));
  }

  /** The transports, in preference order. */
  public List<Transport> transports() {
    return transports;
  }

  /** The transport {@code session} was routed to, or null when it is not connected. */
  public Transport routeOf(String session) {
    return session.equals(localSession()) ? transports.getFirst() : routes.get(session);
  }

  @Override
  public String name() {
    StringBuilder sb = new StringBuilder();
    for (Transport t : transports) {
      sb.append(sb.isEmpty() ? "" : "+").append(t.name());
    }
    return sb.toString();
  }

  /**
   * The dearest per-descriptor costs among the routed transports: a plan is made before its peers
   * are routed, so it assumes the slowest route (which favours fewer, larger reads — harmless on a
   * fast one).
   */
  @Override
  public TransportCosts costs() {
    TransportCosts worst = transports.getFirst().costs();
    for (Transport t : transports) {
      if (t.costs().descriptorSeconds() > worst.descriptorSeconds()) {
        worst = t.costs();
      }
    }
    return worst;
  }

  @Override
  public String localSession() {
    return config.session();
  }

  @Override
  public MemoryRegistration register(MemorySegment region) {
    ensureOpen();
    return registerWithRest(-1, null, region);
  }

  /** Device memory: any of the routed transports that reads it. */
  @Override
  public boolean supportsMemory(MemoryKind kind) {
    for (Transport t : transports) {
      if (t.supportsMemory(kind)) {
        return true;
      }
    }
    return false;
  }

  /**
   * Only when every routed transport revokes: a peer may be routed to any of them, and a caller
   * deciding whether deregistering is a fence must assume the weakest.
   */
  @Override
  public boolean revokesDeregisteredMemory() {
    for (Transport t : transports) {
      if (!t.revokesDeregisteredMemory()) {
        return false;
      }
    }
    return true;
  }

  /**
   * Host memory as {@link #register(MemorySegment)}; device memory with every routed transport that
   * reads that kind (the others could not move it, so peers routed to them fail naming the
   * destination); none: the error names every routed transport and the kind.
   */
  @Override
  public MemoryRegistration register(MemorySegment region, MemoryKind kind) {
    ensureOpen();
    if (!kind.isDevice()) {
      return register(region);
    }
    List<MemoryRegistration> regs = new ArrayList<>(transports.size());
    registerEach(
        regs,
        i ->
            transports.get(i).supportsMemory(kind)
                ? transports.get(i).register(region, kind)
                : null);
    if (regs.isEmpty()) {
      throw MemoryKinds.unsupported(name(), region, kind);
    }
    return new Composite(region, regs);
  }

  /**
   * Adds {@code register.apply(i)} for every transport index (null: skipped) to {@code regs}; on a
   * failure closes what {@code regs} holds, last first, and rethrows.
   */
  private void registerEach(
      List<MemoryRegistration> regs, java.util.function.IntFunction<MemoryRegistration> register) {
    try {
      for (int i = 0; i < transports.size(); i++) {
        MemoryRegistration r = register.apply(i);
        if (r != null) {
          regs.add(r);
        }
      }
    } catch (RuntimeException | Error e) {
      try {
        Closeables.closeAll(reversed(regs));
      } catch (RuntimeException suppressed) {
        e.addSuppressed(suppressed);
      }
      throw e;
    }
  }

  /**
   * Memory from the preferred transport's allocator (shm hands out shared memory), registered with
   * the rest.
   */
  @Override
  public MemoryRegistration allocate(long bytes) {
    ensureOpen();
    MemoryRegistration first = transports.getFirst().allocate(bytes);
    return registerWithRest(0, first, first.segment());
  }

  /** Registers {@code region} with every transport but {@code skip} (which holds {@code done}). */
  private MemoryRegistration registerWithRest(
      int skip, MemoryRegistration done, MemorySegment region) {
    List<MemoryRegistration> regs = new ArrayList<>(transports.size());
    if (done != null) {
      regs.add(done);
    }
    registerEach(regs, i -> i == skip ? null : transports.get(i).register(region));
    return new Composite(region, regs);
  }

  /** One region registered with several transports; closing deregisters in reverse order. */
  private static final class Composite implements MemoryRegistration {
    private final MemorySegment segment;
    private final List<MemoryRegistration> parts;
    private final AtomicBoolean closed = new AtomicBoolean();

    Composite(MemorySegment segment, List<MemoryRegistration> parts) {
      this.segment = segment;
      this.parts = parts;
    }

    @Override
    public MemorySegment segment() {
      return segment;
    }

    @Override
    public void close() {
      if (closed.compareAndSet(false, true)) {
        Closeables.closeAll(reversed(parts));
      }
    }
  }

  @Override
  public byte[] localMetadata() {
    ensureOpen();
    List<TransportBundle.Entry> entries = new ArrayList<>(transports.size());
    entries.add(
        new TransportBundle.Entry(
            transports.get(primary).name(), transports.get(primary).localMetadata()));
    for (int i = 0; i < transports.size(); i++) {
      if (i != primary) {
        entries.add(
            new TransportBundle.Entry(transports.get(i).name(), transports.get(i).localMetadata()));
      }
    }
    return TransportBundle.encode(entries);
  }

  /**
   * Routes {@code session} to the first of this endpoint's transports that the peer offers and that
   * accepts its blob; a single transport's blob (an older or single-transport publisher) is offered
   * to each in turn.
   */
  @Override
  public void connect(String session, byte[] peerMetadata) {
    ensureOpen();
    Map<String, byte[]> offered = new LinkedHashMap<>();
    boolean bundle = TransportBundle.isBundle(peerMetadata);
    if (bundle) {
      try {
        for (TransportBundle.Entry e : TransportBundle.decode(peerMetadata)) {
          offered.put(e.transport(), e.metadata());
        }
      } catch (IllegalArgumentException e) {
        throw new TransportException(
            session, "metadata for peer '" + session + "' is unusable: " + e.getMessage(), e);
      }
    }
    TransportException refused = null;
    for (Transport t : transports) {
      byte[] blob = bundle ? offered.get(t.name()) : peerMetadata;
      if (blob == null) {
        continue;
      }
      try {
        t.connect(session, blob);
        Transport old = routes.put(session, t);
        LOG.debug(
            "peer '{}' routed over {}{}",
            session,
            t.name(),
            old != null && old != t ? " (was " + old.name() + ")" : "");
        return;
      } catch (TransportException e) {
        LOG.debug("peer '{}' not reachable over {}: {}", session, t.name(), e.getMessage());
        if (refused == null) {
          refused = e;
        } else {
          refused.addSuppressed(e);
        }
      }
    }
    String message =
        "no transport of endpoint '"
            + localSession()
            + "' ("
            + name()
            + ") can reach peer '"
            + session
            + "'"
            + (bundle ? ", which offers " + offered.keySet() : "")
            + (refused != null ? ": " + refused.getMessage() : "");
    throw refused == null
        ? new TransportException(session, message)
        : new TransportException(session, message, refused);
  }

  @Override
  public boolean isConnected(String session) {
    return session.equals(localSession()) || routes.containsKey(session);
  }

  /** As the transport the peer is routed to says; false for a session not connected. */
  @Override
  public boolean readAfterExit(String session, boolean allowed) {
    Transport t = routeOf(session);
    return t != null && t.readAfterExit(session, allowed);
  }

  private Transport route(String session) {
    Transport t = routeOf(session);
    if (t == null) {
      throw new TransportException(
          session,
          name()
              + " transport: no peer connected under session '"
              + session
              + "' (connect it with the metadata from its shard table first)");
    }
    return t;
  }

  @Override
  public void read(List<ReadDescriptor> batch, Duration timeout) {
    ensureOpen();
    // Group by session, keeping each session's descriptors in order.
    Map<String, List<ReadDescriptor>> bySession = new LinkedHashMap<>();
    Transport only = null;
    boolean mixed = false;
    for (ReadDescriptor d : batch) {
      if (d.nbytes() == 0) {
        continue;
      }
      Transport t = route(d.session());
      if (only == null) {
        only = t;
      } else if (t != only) {
        mixed = true;
      }
      bySession.computeIfAbsent(d.session(), s -> new ArrayList<>()).add(d);
    }
    if (only == null) {
      return;
    }
    if (!mixed) {
      only.read(batch, timeout);
      return;
    }
    List<PendingRead> posted = new ArrayList<>(bySession.size());
    try {
      for (Map.Entry<String, List<ReadDescriptor>> g : bySession.entrySet()) {
        posted.add(post(g.getKey(), g.getValue()));
      }
    } catch (RuntimeException postFailure) {
      try {
        awaitAll(posted, timeout);
      } catch (RuntimeException drainFailure) {
        postFailure.addSuppressed(drainFailure);
      }
      throw postFailure;
    }
    awaitAll(posted, timeout);
  }

  @Override
  public PendingRead post(String session, List<ReadDescriptor> group) {
    ensureOpen();
    if (group.stream().allMatch(d -> d.nbytes() == 0)) {
      return null; // an empty batch, as every endpoint answers it (the suite found routing did not)
    }
    Transport t = route(session);
    PendingRead p = t.post(session, group);
    return p == null ? null : new Routed(t, p);
  }

  /** A batch posted on one of the routed transports. */
  private record Routed(Transport transport, PendingRead pending) implements PendingRead {
    @Override
    public String session() {
      return pending.session();
    }

    @Override
    public int descriptorCount() {
      return pending.descriptorCount();
    }

    @Override
    public long bytes() {
      return pending.bytes();
    }
  }

  /**
   * Awaits each transport's batches in turn within one deadline; the first failure wins, later ones
   * are suppressed.
   */
  @Override
  public void awaitAll(List<PendingRead> posted, Duration timeout) {
    ensureOpen();
    Map<Transport, List<PendingRead>> byTransport = new IdentityHashMap<>();
    List<Transport> order = new ArrayList<>();
    for (PendingRead p : posted) {
      if (p == null) {
        continue;
      }
      if (!(p instanceof Routed r)) {
        throw new IllegalArgumentException(
            "batch " + p + " was not posted through this routing transport");
      }
      byTransport
          .computeIfAbsent(
              r.transport(),
              t -> {
                order.add(t);
                return new ArrayList<>();
              })
          .add(r.pending());
    }
    long deadline = System.nanoTime() + timeout.toNanos();
    RuntimeException first = null;
    for (Transport t : order) {
      long left = Math.max(1, deadline - System.nanoTime());
      try {
        t.awaitAll(byTransport.get(t), Duration.ofNanos(left));
      } catch (RuntimeException e) {
        if (first == null) {
          first = e;
        } else {
          first.addSuppressed(e);
        }
      }
    }
    if (first != null) {
      throw first;
    }
  }

  @Override
  public Duration defaultTimeout() {
    return config.timeout();
  }

  @Override
  public TransportStats stats() {
    long bytes = 0;
    long reads = 0;
    long batches = 0;
    for (Transport t : transports) {
      TransportStats s = t.stats();
      bytes += s.bytesMoved();
      reads += s.readsIssued();
      batches += s.batches();
    }
    return new TransportStats(bytes, reads, batches);
  }

  @Override
  public boolean isHealthy() {
    if (closed.get()) {
      return false;
    }
    for (Transport t : transports) {
      if (!t.isHealthy()) {
        return false;
      }
    }
    return true;
  }

  private void ensureOpen() {
    if (closed.get()) {
      throw new TransportException(
          null, name() + " transport (session '" + localSession() + "') is closed");
    }
  }

  /** Closes every transport, the last-preferred first. */
  @Override
  public void close() {
    if (closed.compareAndSet(false, true)) {
      routes.clear();
      Closeables.closeAll(reversed(transports));
    }
  }

  private static <T> List<T> reversed(List<T> list) {
    return new ArrayList<>(list).reversed();
  }

  @Override
  public String toString() {
    return "RoutingTransport[session "
        + localSession()
        + ", "
        + name()
        + ", primary "
        + transports.get(primary).name()
        + ", "
        + routes.size()
        + " peers]";
  }
}
