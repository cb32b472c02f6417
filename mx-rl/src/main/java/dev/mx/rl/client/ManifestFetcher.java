package dev.mx.rl.client;

import dev.mx.rl.proto.GetWeightVersionShardManifestResponse;
import dev.mx.rl.proto.RefitWorkerServiceGrpc;
import dev.mx.rl.proto.WeightVersionShard;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.StreamObserver;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.HexFormat;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Fetches the manifest a shard record points to from the worker that published it ({@code
 * RefitWorkerService} at {@code manifest_endpoint}, plaintext, no auth) and accepts it only when
 * the worker's digest and the SHA-256 of the bytes both equal the record's {@code manifest_digest},
 * as ModelExpress's generator does (SPEC.md section 13). Channels to workers are kept until {@link
 * #close}.
 */
public final class ManifestFetcher implements AutoCloseable {
  private final Duration deadline;

  /** One channel per worker endpoint, kept: receivers ask the same workers every step. */
  private final Map<String, ManagedChannel> channels = new ConcurrentHashMap<>();

  public ManifestFetcher(Duration deadline) {
    this.deadline = deadline;
  }

  /** Why a manifest was not accepted; names the version, slot, worker and endpoint. */
  public static final class ManifestException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    ManifestException(String message, Throwable cause) {
      super(message, cause);
    }
  }

  private static String where(WeightVersionShard s) {
    return "manifest of version '"
        + s.getVersionId()
        + "', slot '"
        + s.getSourceSlotId()
        + "' from worker '"
        + s.getWorkerId()
        + "' at "
        + s.getManifestEndpoint();
  }

  /** The manifest bytes, verified. */
  public byte[] fetch(WeightVersionShard shard) {
    return await(fetchAsync(shard));
  }

  /**
   * As {@link #fetch}, without waiting: a receiver asks every worker at once, so a step's tables
   * cost one round trip, not one per slot. Completes exceptionally with a {@link
   * ManifestException}.
   */
  public CompletableFuture<byte[]> fetchAsync(WeightVersionShard shard) {
    return request(shard).thenApply(r -> verified(shard, r));
  }

  private static byte[] verified(
      WeightVersionShard shard, GetWeightVersionShardManifestResponse r) {
    byte[] bytes = r.getManifest().toByteArray();
    String actual = sha256Hex(bytes);
    if (!r.getManifestDigest().equals(shard.getManifestDigest())
        || !actual.equals(shard.getManifestDigest())) {
      throw new ManifestException(
          where(shard)
              + ": digest mismatch: the shard record says "
              + shard.getManifestDigest()
              + ", the worker says "
              + r.getManifestDigest()
              + ", the bytes hash to "
              + actual,
          null);
    }
    return bytes;
  }

  /**
   * The bytes a worker serves under a shard record without comparing digests: for live entries
   * ({@link dev.mx.rl.ManifestBook#serveLive}) that change after their record was published.
   */
  public byte[] fetchLive(WeightVersionShard shard) {
    return await(fetchLiveAsync(shard));
  }

  /** As {@link #fetchLive}, without waiting. */
  public CompletableFuture<byte[]> fetchLiveAsync(WeightVersionShard shard) {
    return request(shard).thenApply(r -> r.getManifest().toByteArray());
  }

  /** The value of a fetch, its {@link ManifestException} thrown as it is. */
  public static byte[] await(CompletableFuture<byte[]> fetch) {
    try {
      return fetch.join();
    } catch (CompletionException e) {
      if (e.getCause() instanceof RuntimeException r) {
        throw r;
      }
      throw e;
    }
  }

  private CompletableFuture<GetWeightVersionShardManifestResponse> request(
      WeightVersionShard shard) {
    String endpoint = shard.getManifestEndpoint();
    int colon = endpoint.lastIndexOf(':');
    int port;
    try {
      port = colon < 1 ? -1 : Integer.parseInt(endpoint.substring(colon + 1));
    } catch (NumberFormatException e) {
      port = -1;
    }
    if (port < 1 || port > 65535) {
      return CompletableFuture.failedFuture(
          new ManifestException(where(shard) + ": the endpoint is not host:port", null));
    }
    String host = endpoint.substring(0, colon);
    int p = port;
    ManagedChannel channel =
        channels.computeIfAbsent(
            endpoint,
            e ->
                NettyChannelBuilder.forAddress(host, p)
                    .usePlaintext()
                    .maxInboundMessageSize(100 * 1024 * 1024)
                    .build());
    CompletableFuture<GetWeightVersionShardManifestResponse> answer = new CompletableFuture<>();
    RefitWorkerServiceGrpc.newStub(channel)
        .withDeadlineAfter(deadline.toMillis(), TimeUnit.MILLISECONDS)
        .getWeightVersionShardManifest(
            RefitRequests.manifest(shard.getVersionId(), shard.getSourceSlotId()),
            new StreamObserver<>() {
              @Override
              public void onNext(GetWeightVersionShardManifestResponse r) {
                answer.complete(r);
              }

              @Override
              public void onError(Throwable t) {
                Status st = Status.fromThrowable(t);
                answer.completeExceptionally(
                    new ManifestException(
                        where(shard) + ": " + st.getCode() + " " + st.getDescription(), t));
              }

              @Override
              public void onCompleted() {
                answer.completeExceptionally(
                    new ManifestException(where(shard) + ": the worker sent no manifest", null));
              }
            });
    return answer;
  }

  /** Closes the channels to the workers asked so far; idempotent. */
  @Override
  public void close() {
    channels.values().forEach(ManagedChannel::shutdownNow);
    channels.clear();
  }

  static String sha256Hex(byte[] bytes) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every JDK has SHA-256", e);
    }
  }
}
