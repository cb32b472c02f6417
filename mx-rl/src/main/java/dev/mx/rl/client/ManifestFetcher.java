package dev.mx.rl.client;

import dev.mx.rl.proto.GetWeightVersionShardManifestResponse;
import dev.mx.rl.proto.RefitWorkerServiceGrpc;
import dev.mx.rl.proto.WeightVersionShard;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.HexFormat;
import java.util.Map;
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
    GetWeightVersionShardManifestResponse r = request(shard);
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
    return request(shard).getManifest().toByteArray();
  }

  private GetWeightVersionShardManifestResponse request(WeightVersionShard shard) {
    String endpoint = shard.getManifestEndpoint();
    int colon = endpoint.lastIndexOf(':');
    int port;
    try {
      port = colon < 1 ? -1 : Integer.parseInt(endpoint.substring(colon + 1));
    } catch (NumberFormatException e) {
      port = -1;
    }
    if (port < 1 || port > 65535) {
      throw new ManifestException(where(shard) + ": the endpoint is not host:port", null);
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
    try {
      return RefitWorkerServiceGrpc.newBlockingStub(channel)
          .withDeadlineAfter(deadline.toMillis(), TimeUnit.MILLISECONDS)
          .getWeightVersionShardManifest(
              RefitRequests.manifest(shard.getVersionId(), shard.getSourceSlotId()));
    } catch (StatusRuntimeException e) {
      throw new ManifestException(
          where(shard) + ": " + e.getStatus().getCode() + " " + e.getStatus().getDescription(), e);
    }
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
