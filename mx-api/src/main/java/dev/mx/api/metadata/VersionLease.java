package dev.mx.api.metadata;

import java.util.Objects;

/**
 * A receiver's claim on a version it reads: while it is live the version's publishers keep its
 * memory unchanged. It expires at {@code expiresAtMillis} (the store's clock) unless renewed.
 *
 * @param versionId the leased version
 * @param holder who holds it (a receiver's worker id); one lease per holder and version
 * @param expiresAtMillis expiry, epoch milliseconds on the store's clock
 */
public record VersionLease(String versionId, String holder, long expiresAtMillis) {

  public VersionLease {
    Objects.requireNonNull(versionId, "version id");
    Objects.requireNonNull(holder, "lease holder");
  }
}
