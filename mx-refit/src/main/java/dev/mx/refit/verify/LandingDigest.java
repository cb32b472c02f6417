package dev.mx.refit.verify;

import dev.mx.api.annotation.Internal;
import dev.mx.api.digest.DigestParts;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/**
 * The digest of one region (a shard, a tile, a staged shard) assembled from the reads that land it:
 * whoever adds its last byte compares, and once it compared equal, {@code afterVerified} (when not
 * null: replaying a staged shard out of staging) may run. Kept across refits by its {@link
 * LandingPlan}, which gives it a fresh accumulator and counter every refit ({@link #renew}).
 */
@Internal
public final class LandingDigest {
  private final long size;
  private final Consumer<String> compare;
  private final Runnable afterVerified;
  private volatile DigestParts parts;
  private volatile AtomicInteger verified;

  /**
   * @param size the region's bytes
   * @param compare throws (a {@link dev.mx.api.error.DigestMismatchException} naming the region)
   *     when the finished digest is not the one published now
   * @param afterVerified work that may use the region's bytes only once they are verified, or null
   */
  LandingDigest(long size, Consumer<String> compare, Runnable afterVerified) {
    this.size = size;
    this.compare = compare;
    this.afterVerified = afterVerified;
  }

  long size() {
    return size;
  }

  DigestParts parts() {
    return parts;
  }

  Runnable afterVerified() {
    return afterVerified;
  }

  /** A fresh accumulator for this refit, and the counter a verified region adds one to. */
  void renew(DigestParts fresh, AtomicInteger counter) {
    this.parts = fresh;
    this.verified = counter;
  }

  /** Compares the finished digest and counts the region verified. */
  void check() {
    compare.accept(parts.digest());
    verified.incrementAndGet();
  }
}
