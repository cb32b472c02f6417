package dev.mx.rl;

import io.grpc.Server;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.protobuf.services.HealthStatusManager;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An embeddable gRPC server for {@code model_express.refit.RefitService} over a {@link
 * RefitBackend}, and/or a trainer's {@code RefitWorkerService} over a {@link ManifestBook}, with
 * {@code grpc.health.v1.Health} reporting each SERVING.
 *
 * <pre>{@code
 * try (RefitServer server = RefitServer.builder().backend(new MemoryRefitBackend(clock)).build()) {
 *   ... ManagedChannel to "127.0.0.1:" + server.port() ...
 * }
 * }</pre>
 */
public final class RefitServer implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(RefitServer.class);

  /** The service names, as health checks ask for them. */
  public static final String REFIT_SERVICE = "model_express.refit.RefitService";

  public static final String WORKER_SERVICE = "model_express.refit.RefitWorkerService";

  /** The reference server's message size bound for RefitService: 100 MiB. */
  public static final int MAX_MESSAGE_BYTES = 100 * 1024 * 1024;

  private final Server server;
  private final RefitBackend backend;
  private final boolean closeBackend;
  private final HealthStatusManager health;
  private final AtomicBoolean closed = new AtomicBoolean();

  private RefitServer(Builder b) {
    this.backend = b.backend;
    this.closeBackend = b.closeBackend;
    this.health = new HealthStatusManager();
    NettyServerBuilder nb =
        NettyServerBuilder.forAddress(new InetSocketAddress(b.host, b.port))
            .maxInboundMessageSize(MAX_MESSAGE_BYTES)
            .addService(health.getHealthService());
    List<String> services = new ArrayList<>();
    if (b.backend != null) {
      nb.addService(
          ServerInterceptors.intercept(
              RefitServiceImpl.definition(new RefitControlPlane(b.backend, b.clock, b.uids)),
              b.interceptors));
      services.add(REFIT_SERVICE);
    }
    if (b.manifests != null) {
      nb.addService(new RefitWorkerServiceImpl(b.manifests));
      services.add(WORKER_SERVICE);
    }
    try {
      this.server = nb.build().start();
    } catch (IOException e) {
      if (closeBackend && backend != null) {
        backend.close();
      }
      throw new UncheckedIOException(
          "cannot serve RefitService on " + b.host + ":" + b.port + ": " + e.getMessage(), e);
    }
    for (String s : services) {
      health.setStatus(s, ServingStatus.SERVING);
    }
    LOG.info(
        "serving {} on {} (backend {})",
        services,
        address(),
        b.backend == null ? "none" : b.backend.describe());
  }

  public static Builder builder() {
    return new Builder();
  }

  /** The bound port (the ephemeral one when built with port 0). */
  public int port() {
    return ((InetSocketAddress) server.getListenSockets().getFirst()).getPort();
  }

  /** {@code host:port} as bound. */
  public String address() {
    InetSocketAddress a = (InetSocketAddress) server.getListenSockets().getFirst();
    return a.getHostString() + ":" + a.getPort();
  }

  /** The backend, or null for a worker-only server. */
  public RefitBackend backend() {
    return backend;
  }

  /** Blocks until the server shut down. */
  public void awaitTermination() throws InterruptedException {
    server.awaitTermination();
  }

  /**
   * Stops serving (in-flight calls get 5 s), then closes the backend when it owns it; idempotent.
   */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    health.enterTerminalState();
    server.shutdown();
    try {
      if (!server.awaitTermination(5, TimeUnit.SECONDS)) {
        server.shutdownNow();
      }
    } catch (InterruptedException e) {
      server.shutdownNow();
      Thread.currentThread().interrupt();
    } finally {
      if (closeBackend && backend != null) {
        backend.close();
      }
    }
  }

  /** How to build a {@link RefitServer}. */
  public static final class Builder {
    private String host = "127.0.0.1";
    private int port;
    private RefitBackend backend;
    private boolean closeBackend;
    private ManifestBook manifests;
    private RefitClock clock = RefitClock.system();
    private VersionUids uids = VersionUids.random();
    private final List<ServerInterceptor> interceptors = new ArrayList<>();

    private Builder() {}

    /** Intercepts RefitService's calls (metrics, traffic accounting); the last added runs first. */
    public Builder intercept(ServerInterceptor interceptor) {
      interceptors.add(Objects.requireNonNull(interceptor, "interceptor"));
      return this;
    }

    /** The address to bind: {@code 127.0.0.1} by default, {@code 0.0.0.0} for every interface. */
    public Builder host(String host) {
      this.host = Objects.requireNonNull(host, "host");
      return this;
    }

    /** The port; 0 (the default) binds an ephemeral one, see {@link RefitServer#port()}. */
    public Builder port(int port) {
      if (port < 0 || port > 65535) {
        throw new IllegalArgumentException("port must be 0..65535, got " + port);
      }
      this.port = port;
      return this;
    }

    /** Serves RefitService over {@code backend}; the caller keeps it (and closes it). */
    public Builder backend(RefitBackend backend) {
      this.backend = Objects.requireNonNull(backend, "backend");
      this.closeBackend = false;
      return this;
    }

    /** As {@link #backend}, and the server closes it when it closes. */
    public Builder ownedBackend(RefitBackend backend) {
      backend(backend);
      this.closeBackend = true;
      return this;
    }

    /** Serves RefitWorkerService from {@code manifests}. */
    public Builder manifests(ManifestBook manifests) {
      this.manifests = Objects.requireNonNull(manifests, "manifests");
      return this;
    }

    /** The clock of {@code created_at_unix_ms} (the backend has its own for expiries). */
    public Builder clock(RefitClock clock) {
      this.clock = Objects.requireNonNull(clock, "clock");
      return this;
    }

    /** How new versions' uids are chosen ({@link VersionUids#random()} by default). */
    public Builder uids(VersionUids uids) {
      this.uids = Objects.requireNonNull(uids, "uids");
      return this;
    }

    /** Binds and starts serving. */
    public RefitServer build() {
      if (backend == null && manifests == null) {
        throw new IllegalStateException("a RefitServer needs a backend, manifests, or both");
      }
      return new RefitServer(this);
    }
  }
}
