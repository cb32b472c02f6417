package dev.mx.rl;

import dev.mx.rl.proto.CreateWeightVersionRequest;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.UUID;

/** How a new weight version's 8-hex uid is chosen; asked again (attempt 1..4) on a collision. */
@FunctionalInterface
public interface VersionUids {
  String next(CreateWeightVersionRequest request, int attempt);

  /** The reference's: the first 8 hex digits of a random (v4) UUID. */
  static VersionUids random() {
    return (request, attempt) -> UUID.randomUUID().toString().substring(0, 8);
  }

  /**
   * The recorded vectors' (SPEC README): the first 8 hex digits of SHA-256 of {@code model_name +
   * "\0" + idempotency_key}, so a replay of the recorded lifecycle gives the same uids. Every
   * attempt gives the same uid, so a collision exhausts the attempts.
   */
  static VersionUids deterministic() {
    return (request, attempt) ->
        sha256Hex(request.getModelName() + "\0" + request.getIdempotencyKey()).substring(0, 8);
  }

  /** Lowercase hex SHA-256 of the UTF-8 bytes of {@code s}. */
  static String sha256Hex(String s) {
    return sha256Hex(s.getBytes(StandardCharsets.UTF_8));
  }

  /** Lowercase hex SHA-256 of {@code bytes} (a manifest digest). */
  static String sha256Hex(byte[] bytes) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every JDK has SHA-256", e);
    }
  }

  /**
   * The lease id of {@code workerId} on {@code versionId}: the first 4 bytes of SHA-256 of {@code
   * version_id + "\0" + worker_id}, as 8 lowercase hex (SPEC.md section 3.8), so re-registering
   * renews.
   */
  static String leaseId(String versionId, String workerId) {
    return sha256Hex(versionId + "\0" + workerId).substring(0, 8);
  }
}
