package dev.mx.rl.client;

import dev.mx.rl.proto.CreateWeightVersionRequest;
import dev.mx.rl.proto.CreateWeightVersionShardRequest;
import dev.mx.rl.proto.CreateWeightVersionShardResponse;
import dev.mx.rl.proto.RefitServiceGrpc;
import dev.mx.rl.proto.VersionLease;
import dev.mx.rl.proto.WeightVersion;
import dev.mx.rl.proto.WeightVersionShard;
import dev.mx.rl.proto.WorkerRegistration;
import dev.mx.rl.proto.WorkerRole;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;

/**
 * A blocking client of {@code RefitService} at {@code host:port} (plaintext, as the reference),
 * each call under a deadline (30 s by default, the Python clients' {@code rpc_timeout_seconds}).
 * Failures are {@link RefitCallException}s naming the RPC, the server and what the server said.
 */
public final class RefitClient implements AutoCloseable {
  /** The Python clients' default per-call deadline. */
  public static final Duration DEFAULT_DEADLINE = Duration.ofSeconds(30);

  private final String target;
  private final ManagedChannel channel;
  private final RefitServiceGrpc.RefitServiceBlockingStub stub;
  private final Duration deadline;
  private final AtomicBoolean closed = new AtomicBoolean();

  public RefitClient(String host, int port) {
    this(host, port, DEFAULT_DEADLINE);
  }

  public RefitClient(String host, int port, Duration deadline) {
    this.target = host + ":" + port;
    this.channel =
        NettyChannelBuilder.forAddress(host, port)
            .usePlaintext()
            .maxInboundMessageSize(100 * 1024 * 1024)
            .build();
    this.stub = RefitServiceGrpc.newBlockingStub(channel);
    this.deadline = deadline;
  }

  /**
   * A fresh process-lifetime worker id: 8 hex digits of a random UUID, as the Python clients pick
   * (a restarted worker registers a new id; the old one expires).
   */
  public static String freshWorkerId() {
    return UUID.randomUUID().toString().replace("-", "").substring(0, 8);
  }

  public String target() {
    return target;
  }

  private <R> R call(String rpc, Function<RefitServiceGrpc.RefitServiceBlockingStub, R> f) {
    try {
      return f.apply(stub.withDeadlineAfter(deadline.toMillis(), TimeUnit.MILLISECONDS));
    } catch (StatusRuntimeException e) {
      throw new RefitCallException(rpc, target, e);
    }
  }

  public WorkerRegistration registerWorker(
      String workerId, WorkerRole role, String modelName, int ttlSeconds) {
    return call(
        "RegisterWorker",
        s -> s.registerWorker(RefitRequests.registerWorker(workerId, role, modelName, ttlSeconds)));
  }

  public WeightVersion createVersion(CreateWeightVersionRequest request) {
    return call("CreateWeightVersion", s -> s.createWeightVersion(request));
  }

  public WeightVersion getVersion(String uid) {
    return call("GetWeightVersion", s -> s.getWeightVersion(RefitRequests.getVersion(uid)));
  }

  public WeightVersion deleteVersion(String uid) {
    return call(
        "DeleteWeightVersion", s -> s.deleteWeightVersion(RefitRequests.deleteVersion(uid)));
  }

  public CreateWeightVersionShardResponse publishShard(WeightVersionShard shard) {
    return call(
        "CreateWeightVersionShard",
        s ->
            s.createWeightVersionShard(
                CreateWeightVersionShardRequest.newBuilder().setShard(shard).build()));
  }

  public List<WeightVersionShard> listShards(String versionId) {
    return call(
        "ListWeightVersionShards",
        s -> s.listWeightVersionShards(RefitRequests.listShards(versionId)).getShardsList());
  }

  public boolean deleteShard(String versionId, String sourceSlotId, String workerId) {
    return call(
        "DeleteWeightVersionShard",
        s ->
            s.deleteWeightVersionShard(RefitRequests.deleteShard(versionId, sourceSlotId, workerId))
                .getDeleted());
  }

  public VersionLease registerLease(String versionId, String workerId, int ttlSeconds) {
    return call(
        "RegisterVersionLease",
        s -> s.registerVersionLease(RefitRequests.registerLease(versionId, workerId, ttlSeconds)));
  }

  public boolean deleteLease(String versionId, String leaseId, String workerId) {
    return call(
        "DeleteVersionLease",
        s ->
            s.deleteVersionLease(RefitRequests.deleteLease(versionId, leaseId, workerId))
                .getDeleted());
  }

  /** Closes the channel; idempotent. */
  @Override
  public void close() {
    if (closed.compareAndSet(false, true)) {
      channel.shutdownNow();
      try {
        channel.awaitTermination(5, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
