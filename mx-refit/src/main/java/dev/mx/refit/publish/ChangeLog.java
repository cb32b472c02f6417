package dev.mx.refit.publish;

import dev.mx.api.annotation.Stable;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;

/**
 * The step at which each published shard last changed, for delta refits: a shard whose digest is
 * the one it had at the previous publication keeps its last-changed step, any other gets the step
 * being published. One log serves every buffer set of a rank (a shard is named by tensor and
 * offset, not by address), so a double-buffered trainer reports the same step whichever set it
 * publishes from. Thread-safe.
 */
@Stable
public final class ChangeLog {
  private record Key(String tensor, java.util.List<Long> offset) {}

  private record Entry(String digest, long changedStep) {}

  private final Map<Key, Entry> last = new HashMap<>();

  /**
   * Records that shard {@code offset} of {@code tensor} holds bytes with {@code digest} at {@code
   * step}, and returns the step at which those bytes last changed.
   *
   * @param digest the shard's digest; required, since "unchanged" is decided by it
   */
  public synchronized long observe(String tensor, long[] offset, String digest, long step) {
    Objects.requireNonNull(digest, "digest of a shard of '" + tensor + "'");
    Key k = new Key(tensor, Arrays.stream(offset).boxed().toList());
    Entry e = last.get(k);
    if (e == null || !e.digest().equals(digest) || e.changedStep() > step) {
      e = new Entry(digest, step);
      last.put(k, e);
    }
    return e.changedStep();
  }
}
