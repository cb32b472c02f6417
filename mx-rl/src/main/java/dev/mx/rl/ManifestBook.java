package dev.mx.rl;

import static dev.mx.rl.RefitText.q;

import java.util.Arrays;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

/**
 * The manifests one trainer process published, by {@code (version_id, source_slot_id)}, for its
 * {@code RefitWorkerService} (SPEC.md section 3.10). A manifest is put here before its shard record
 * is published; a different manifest under the same key is refused.
 */
public final class ManifestBook {
  private record Key(String versionId, String sourceSlotId) {}

  private final Map<Key, byte[]> manifests = new ConcurrentHashMap<>();

  /**
   * Entries computed when asked for: a worker's live directory entry, which changes as it beats.
   */
  private final Map<Key, Supplier<byte[]>> live = new ConcurrentHashMap<>();

  /**
   * Makes {@code manifest} retrievable; returns its digest (lowercase hex SHA-256), the {@code
   * manifest_digest} of the shard record to publish.
   *
   * @throws IllegalStateException when another manifest was put under this key
   */
  public String put(String versionId, String sourceSlotId, byte[] manifest) {
    byte[] copy = manifest.clone();
    byte[] held = manifests.putIfAbsent(new Key(versionId, sourceSlotId), copy);
    if (held != null && !Arrays.equals(held, copy)) {
      throw new IllegalStateException(
          "version "
              + q(versionId)
              + ", slot "
              + q(sourceSlotId)
              + ": a different manifest was already published under this key");
    }
    return VersionUids.sha256Hex(copy);
  }

  /**
   * Serves {@code entry}'s current bytes under this key. Unlike a manifest, what it answers changes
   * over time, so the shard record pointing to it cannot carry its digest.
   */
  public void serveLive(String versionId, String sourceSlotId, Supplier<byte[]> entry) {
    live.put(new Key(versionId, sourceSlotId), entry);
  }

  /** The manifest put under this key, or the live entry's bytes as of now. */
  public Optional<byte[]> get(String versionId, String sourceSlotId) {
    Key k = new Key(versionId, sourceSlotId);
    byte[] m = manifests.get(k);
    if (m != null) {
      return Optional.of(m.clone());
    }
    Supplier<byte[]> entry = live.get(k);
    return entry == null ? Optional.empty() : Optional.of(entry.get());
  }

  /** Forgets one manifest (its shard record was evicted). */
  public void forget(String versionId, String sourceSlotId) {
    manifests.remove(new Key(versionId, sourceSlotId));
  }

  /** Forgets every manifest of {@code versionId} (after its shards were evicted). */
  public void forget(String versionId) {
    manifests.keySet().removeIf(k -> k.versionId().equals(versionId));
  }
}
