package dev.mx.refit.verify;

import dev.mx.api.annotation.Internal;
import dev.mx.api.digest.DigestParts;
import java.util.function.Consumer;

/**
 * The digest of one region (a shard, a tile, a staged shard) assembled from the reads that land it:
 * whoever adds its last byte compares, and once it compared equal, {@code afterVerified} (when not
 * null: replaying a staged shard out of staging) may run.
 *
 * @param parts the accumulator
 * @param compare throws (a {@link dev.mx.api.error.DigestMismatchException} naming the region) when
 *     the finished digest is not the published one, and counts the region verified otherwise
 * @param afterVerified work that may use the region's bytes only once they are verified, or null
 */
@Internal
public record LandingDigest(DigestParts parts, Consumer<String> compare, Runnable afterVerified) {

  /** Compares the finished digest. */
  void check() {
    compare.accept(parts.digest());
  }
}
