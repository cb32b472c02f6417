package dev.mx.digest;

import dev.mx.api.util.Settings;
import java.lang.foreign.MemorySegment;
import java.util.HexFormat;
import java.util.concurrent.Executor;
import org.bouncycastle.crypto.digests.Blake2bDigest;

/**
 * The shard digest of ModelExpress 0.7.0 ({@code tensor_digest}, ModelExpress; ARCHITECTURE §7.2),
 * bit-exact, over off-heap or heap memory at any alignment.
 *
 * <p>The bytes are read as little-endian signed int32 words in rows of 1024 words; the row sums
 * (int64, wrapping) are reduced to their sum and their sum weighted by row index (1-based); the
 * tail words after the last whole row likewise; the ragged trailing bytes (unsigned) and {@code n
 * mod 4} are added when {@code n} is not a multiple of 4. BLAKE2b with a 16-byte output hashes
 * these few scalars, each as 8 little-endian bytes. The result depends only on the bytes, never on
 * their address.
 *
 * <p>What it detects, by design of the reference: any change of the byte count, of a row's sum, or
 * of the order of whole 4 KiB rows. It does <em>not</em> detect a reordering of words inside one
 * row, since a row contributes only its sum.
 *
 * <p>Speed: one pass over memory. Whole rows go to a SIMD row kernel: the Vector API one for inputs
 * that fit in cache when the JVM runs with {@code --add-modules jdk.incubator.vector}, otherwise a
 * plain loop that C2 vectorises (see {@link #kernelName(long)}); large inputs can be split by row
 * ranges over threads ({@link #digest(MemorySegment, int)}), which gives the same result because
 * the row scalars are sums mod 2^64 that combine exactly ({@link RowSums#followedBy}).
 *
 * <p>Publishing: {@link #publishedDigest(MemorySegment)} follows {@code -Dmx.publish.digest} /
 * {@code MX_RESHARD_PUBLISH_DIGEST}, read at each call. In mx it is <b>on</b> unless set false,
 * because this digest runs at memory speed; ModelExpress defaults it to off, so a Python publisher
 * announces no digests unless its environment turns them on.
 */
public final class ShardDigest {
  /** Words per digest row. */
  public static final int ROW_WORDS = RowKernel.ROW_WORDS;

  /** Bytes per digest row (4 KiB): the granularity at which a permutation is detected. */
  public static final int ROW_BYTES = RowKernel.ROW_BYTES;

  /** Length of a digest in hex characters. */
  public static final int HEX_LENGTH = 32;

  /** System property that switches digest publication (wins over the environment). */
  public static final String PUBLISH_PROPERTY = "mx.publish.digest";

  /** Environment variable that switches digest publication, as in ModelExpress. */
  public static final String PUBLISH_ENV = "MX_RESHARD_PUBLISH_DIGEST";

  /** mx publishes digests unless told not to (ModelExpress's default is off). */
  public static final boolean PUBLISH_DEFAULT = true;

  /**
   * Below this many whole rows per thread (1 MiB) {@link #digest(MemorySegment, int)} does not
   * split: a hand over to another thread costs more than summing that much memory.
   */
  public static final long MIN_ROWS_PER_THREAD = 256;

  private static final int DIGEST_BYTES = 16;

  private static final ThreadLocal<Blake2bDigest> HASHER =
      ThreadLocal.withInitial(() -> new Blake2bDigest(DIGEST_BYTES * 8));
  private static final HexFormat HEX = HexFormat.of();

  private ShardDigest() {}

  /**
   * The digest of {@code bytes} (any length including zero, any alignment), on the calling thread.
   */
  public static String digest(MemorySegment bytes) {
    return new StreamingDigest().update(bytes).digest();
  }

  /**
   * The digest of {@code bytes} on up to {@code threads} threads (0 = all available processors),
   * each taking a contiguous range of at least {@link #MIN_ROWS_PER_THREAD} rows. Equal to {@link
   * #digest(MemorySegment)} for every thread count.
   */
  public static String digest(MemorySegment bytes, int threads) {
    if (threads < 0) {
      throw new IllegalArgumentException(
          "threads must be 0 (all processors) or positive, got " + threads);
    }
    int wanted = threads == 0 ? Runtime.getRuntime().availableProcessors() : threads;
    long rows = bytes.byteSize() / ROW_BYTES;
    int tasks = (int) Math.min(wanted, Math.max(1, rows / MIN_ROWS_PER_THREAD));
    if (tasks <= 1) {
      return digest(bytes);
    }
    return new StreamingDigest().update(bytes, ParallelRows.pool(), tasks).digest();
  }

  /**
   * The digest of {@code bytes} with its whole rows split into exactly {@code min(tasks, rows)}
   * contiguous ranges run on {@code executor} (one on the calling thread), with no size threshold.
   * Equal to {@link #digest(MemorySegment)} for every split.
   */
  public static String digest(MemorySegment bytes, Executor executor, int tasks) {
    if (tasks < 1) {
      throw new IllegalArgumentException("tasks must be positive, got " + tasks);
    }
    return new StreamingDigest().update(bytes, executor, tasks).digest();
  }

  /** The scalars the digest hashes, in order (see {@link StreamingDigest#scalars()}). */
  public static long[] scalars(MemorySegment bytes) {
    return new StreamingDigest().update(bytes).scalars();
  }

  /**
   * BLAKE2b-128 (no key) over each scalar as 8 little-endian bytes (two's complement), in lowercase
   * hex.
   */
  public static String hashScalars(long... scalars) {
    // One hasher per thread: a receiver finishes thousands of tile digests per step, and a fresh
    // hasher each time was most of the garbage verification made.
    Blake2bDigest blake = HASHER.get();
    blake.reset();
    byte[] le = new byte[Long.BYTES];
    for (long value : scalars) {
      for (int i = 0; i < Long.BYTES; i++) {
        le[i] = (byte) (value >>> (8 * i));
      }
      blake.update(le, 0, le.length);
    }
    byte[] out = new byte[DIGEST_BYTES];
    blake.doFinal(out, 0);
    return HEX.formatHex(out);
  }

  /** Whether publishers announce digests, from the live system properties and environment. */
  public static boolean publicationEnabled() {
    return publicationEnabled(Settings.system());
  }

  /**
   * Whether publishers announce digests under {@code settings} (default {@value #PUBLISH_DEFAULT}).
   */
  public static boolean publicationEnabled(Settings settings) {
    return settings.bool(PUBLISH_PROPERTY, PUBLISH_ENV, PUBLISH_DEFAULT);
  }

  /**
   * {@link #digest(MemorySegment)} when publication is on (read now, not cached), otherwise null:
   * what a publisher puts into its shard table.
   */
  public static String publishedDigest(MemorySegment bytes) {
    return publishedDigest(bytes, Settings.system());
  }

  /** As {@link #publishedDigest(MemorySegment)}, reading the switch from {@code settings}. */
  public static String publishedDigest(MemorySegment bytes, Settings settings) {
    return publicationEnabled(settings) ? digest(bytes) : null;
  }

  /**
   * The row kernel an input of {@code byteCount} bytes is digested with, e.g. {@code vector-512} or
   * {@code scalar}.
   */
  public static String kernelName(long byteCount) {
    return RowKernels.forBytes(byteCount).name();
  }

  /**
   * Why the Vector API kernel is not in use (e.g. the module is not resolved), or null when it is.
   */
  public static Throwable vectorKernelUnavailabilityCause() {
    return RowKernels.vectorUnavailabilityCause();
  }
}
