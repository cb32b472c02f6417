package dev.mx.refit;

import dev.mx.api.annotation.Stable;
import dev.mx.api.plan.BoundingMode;
import dev.mx.api.util.Settings;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalLong;

/**
 * Typed receiver configuration, the {@code mx.receiver.*} keys ({@link ReceiverSetting}). Build it
 * from defaults with the withers, or from a property map with {@link #fromProperties}, where an
 * unknown key is an error that suggests the closest known one. A {@link ReceiverContext} concludes
 * it with the other receiver settings before a receiver is built.
 *
 * @param wire the wire policy: {@code fused}, {@code phased}, or the fully qualified name of a
 *     {@link dev.mx.api.refit.WirePolicy} class with a public no-argument constructor
 * @param verify how much to verify before installing
 * @param rank this receiver's rank, named in records and errors
 * @param timeout the per-read transport timeout (also given to discovery)
 * @param doubleBuffer two sets of receive buffers used alternately, so that buffers handed to the
 *     installer are never written by the next refit (the installer may then keep them zero-copy)
 * @param threads workers for batched re-slice, casts and digests (0 = one per available core)
 * @param bounding how the planner bounds descriptor-heavy sources: {@code shard} (default: shard
 *     staging chosen by cost per source) or {@code modelexpress} (ModelExpress; ARCHITECTURE §7.3
 *     exactly); when unset it follows {@code MX_RESHARD_BOUNDING}
 * @param stagingBytes the staging budget in bytes; empty: not set here, so the context takes {@code
 *     MX_RECEIVER_STAGING_BYTES} or, unset too, {@code auto}
 * @param landingBytes bytes per landing batch ({@code 0}: one batch per peer); empty: not set here,
 *     so the context takes {@code MX_RECEIVER_LANDING_BYTES} or the default
 */
@Stable
public record ReceiverConfig(
    String wire,
    VerifyMode verify,
    int rank,
    Duration timeout,
    boolean doubleBuffer,
    int threads,
    BoundingMode bounding,
    OptionalLong stagingBytes,
    OptionalLong landingBytes) {

  public static final String WIRE = ReceiverSetting.WIRE.property();
  public static final String VERIFY = ReceiverSetting.VERIFY.property();
  public static final String RANK = ReceiverSetting.RANK.property();
  public static final String TIMEOUT_SECONDS = ReceiverSetting.TIMEOUT_SECONDS.property();
  public static final String DOUBLE_BUFFER = ReceiverSetting.DOUBLE_BUFFER.property();
  public static final String THREADS = ReceiverSetting.THREADS.property();
  public static final String BOUNDING = BoundingMode.PROPERTY;
  public static final String STAGING_BYTES = ReceiverSetting.STAGING_BYTES.property();
  public static final String LANDING_BYTES = ReceiverSetting.LANDING_BYTES.property();

  /** Every key, in documentation order. */
  public static final List<String> KEYS =
      ReceiverSetting.properties().stream()
          .filter(k -> k.startsWith(ReceiverSetting.RECEIVER_PREFIX))
          .toList();

  public static final String FUSED = "fused";
  public static final String PHASED = "phased";

  /** Default read timeout, as ModelExpress' receiver. */
  public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(1200);

  public ReceiverConfig {
    Objects.requireNonNull(wire, WIRE);
    Objects.requireNonNull(verify, VERIFY);
    Objects.requireNonNull(timeout, TIMEOUT_SECONDS);
    Objects.requireNonNull(bounding, BOUNDING);
    Objects.requireNonNull(stagingBytes, STAGING_BYTES);
    Objects.requireNonNull(landingBytes, LANDING_BYTES);
    wire = wire.trim();
    if (wire.isEmpty()) {
      throw new IllegalArgumentException(
          WIRE + " is empty; use fused, phased or a WirePolicy class name");
    }
    if (wire.equalsIgnoreCase(FUSED) || wire.equalsIgnoreCase(PHASED)) {
      wire = wire.toLowerCase(Locale.ROOT);
    }
    if (rank < 0) {
      throw new IllegalArgumentException(RANK + "=" + rank + " must be >= 0");
    }
    if (timeout.isNegative() || timeout.isZero()) {
      throw new IllegalArgumentException(TIMEOUT_SECONDS + " must be positive, got " + timeout);
    }
    if (threads < 0) {
      throw new IllegalArgumentException(
          THREADS + "=" + threads + " must be >= 0 (0 = one per core)");
    }
    if (stagingBytes.isPresent() && stagingBytes.getAsLong() <= 0) {
      throw new IllegalArgumentException(
          STAGING_BYTES + "=" + stagingBytes.getAsLong() + " must be positive");
    }
    if (landingBytes.isPresent() && landingBytes.getAsLong() < 0) {
      throw new IllegalArgumentException(
          LANDING_BYTES + "=" + landingBytes.getAsLong() + " must not be negative");
    }
  }

  /** A configuration whose staging and landing bytes follow the context's settings. */
  public ReceiverConfig(
      String wire,
      VerifyMode verify,
      int rank,
      Duration timeout,
      boolean doubleBuffer,
      int threads,
      BoundingMode bounding) {
    this(
        wire,
        verify,
        rank,
        timeout,
        doubleBuffer,
        threads,
        bounding,
        OptionalLong.empty(),
        OptionalLong.empty());
  }

  /** A configuration with the default (shard) bounding. */
  public ReceiverConfig(
      String wire,
      VerifyMode verify,
      int rank,
      Duration timeout,
      boolean doubleBuffer,
      int threads) {
    this(wire, verify, rank, timeout, doubleBuffer, threads, BoundingMode.SHARD);
  }

  /**
   * Fused wire, every installed byte verified, rank 0, 1200 s timeout, single buffers, one worker
   * per core, shard bounding; staging and landing bytes as the context's settings say.
   */
  public static ReceiverConfig defaults() {
    return new ReceiverConfig(
        FUSED, VerifyMode.ALL, 0, DEFAULT_TIMEOUT, false, 0, BoundingMode.SHARD);
  }

  /**
   * Parses a property map. Keys must be known {@code mx.receiver.*} keys; when {@code
   * mx.receiver.wire} is absent the policy follows {@code MX_RESHARD_FUSED_WIRE} (default fused),
   * and the bounding, staging and landing keys their environment variables, as read from {@code
   * settings}.
   *
   * @throws IllegalArgumentException naming a bad key (with the closest known key) or value
   */
  public static ReceiverConfig fromProperties(Map<String, String> properties, Settings settings) {
    for (String key : properties.keySet()) {
      if (!KEYS.contains(key)) {
        throw new IllegalArgumentException(
            "unknown receiver configuration key '"
                + key
                + "'"
                + ReceiverSetting.suggestion(key, KEYS)
                + "; known keys: "
                + String.join(", ", KEYS));
      }
    }
    ReceiverConfig d = defaults();
    String wire = properties.get(WIRE);
    if (wire == null || wire.isBlank()) {
      wire =
          SettingValues.bool(ReceiverSetting.FUSED_WIRE, SettingValues.lookup(Map.of(), settings))
              ? FUSED
              : PHASED;
    }
    SettingValues.Lookup staged = SettingValues.lookup(properties, settings);
    return new ReceiverConfig(
        wire,
        properties.containsKey(VERIFY) ? VerifyMode.parse(properties.get(VERIFY)) : d.verify,
        properties.containsKey(RANK) ? parseInt(RANK, properties.get(RANK)) : d.rank,
        properties.containsKey(TIMEOUT_SECONDS)
            ? parseSeconds(properties.get(TIMEOUT_SECONDS))
            : d.timeout,
        properties.containsKey(DOUBLE_BUFFER)
            ? SettingValues.parseBool(DOUBLE_BUFFER, properties.get(DOUBLE_BUFFER))
            : d.doubleBuffer,
        properties.containsKey(THREADS) ? parseInt(THREADS, properties.get(THREADS)) : d.threads,
        properties.containsKey(BOUNDING)
            ? parseBounding(properties.get(BOUNDING))
            : BoundingMode.fromSettings(settings, d.bounding),
        SettingValues.stagingBytes(staged),
        SettingValues.landingBytes(staged));
  }

  /**
   * {@link #fromProperties} over the {@code mx.receiver.*} system properties visible to {@code
   * settings}.
   */
  public static ReceiverConfig fromSettings(Settings settings) {
    Map<String, String> props = new LinkedHashMap<>();
    for (String key : KEYS) {
      String v = settings.property(key);
      if (v != null) {
        props.put(key, v);
      }
    }
    return fromProperties(props, settings);
  }

  /**
   * This configuration as a property map that {@link #fromProperties} reads back to an equal config
   * (staging and landing bytes only where set).
   */
  public Map<String, String> toProperties() {
    Map<String, String> m = new LinkedHashMap<>();
    m.put(WIRE, wire);
    m.put(VERIFY, verify.label());
    m.put(RANK, Integer.toString(rank));
    m.put(
        TIMEOUT_SECONDS,
        timeout.toMillis() % 1000 == 0
            ? Long.toString(timeout.toSeconds())
            : Double.toString(timeout.toMillis() / 1000.0));
    m.put(DOUBLE_BUFFER, Boolean.toString(doubleBuffer));
    m.put(THREADS, Integer.toString(threads));
    m.put(BOUNDING, bounding.label());
    stagingBytes.ifPresent(b -> m.put(STAGING_BYTES, Long.toString(b)));
    landingBytes.ifPresent(b -> m.put(LANDING_BYTES, Long.toString(b)));
    return m;
  }

  public ReceiverConfig withWire(String w) {
    return new ReceiverConfig(
        w, verify, rank, timeout, doubleBuffer, threads, bounding, stagingBytes, landingBytes);
  }

  public ReceiverConfig withVerify(VerifyMode v) {
    return new ReceiverConfig(
        wire, v, rank, timeout, doubleBuffer, threads, bounding, stagingBytes, landingBytes);
  }

  public ReceiverConfig withRank(int r) {
    return new ReceiverConfig(
        wire, verify, r, timeout, doubleBuffer, threads, bounding, stagingBytes, landingBytes);
  }

  public ReceiverConfig withTimeout(Duration t) {
    return new ReceiverConfig(
        wire, verify, rank, t, doubleBuffer, threads, bounding, stagingBytes, landingBytes);
  }

  public ReceiverConfig withDoubleBuffer(boolean d) {
    return new ReceiverConfig(
        wire, verify, rank, timeout, d, threads, bounding, stagingBytes, landingBytes);
  }

  public ReceiverConfig withThreads(int t) {
    return new ReceiverConfig(
        wire, verify, rank, timeout, doubleBuffer, t, bounding, stagingBytes, landingBytes);
  }

  public ReceiverConfig withBounding(BoundingMode b) {
    return new ReceiverConfig(
        wire, verify, rank, timeout, doubleBuffer, threads, b, stagingBytes, landingBytes);
  }

  /** A staging budget of {@code bytes} (positive). */
  public ReceiverConfig withStagingBytes(long bytes) {
    return new ReceiverConfig(
        wire,
        verify,
        rank,
        timeout,
        doubleBuffer,
        threads,
        bounding,
        OptionalLong.of(bytes),
        landingBytes);
  }

  /** Landing batches of {@code bytes} ({@code 0}: one batch per peer). */
  public ReceiverConfig withLandingBytes(long bytes) {
    return new ReceiverConfig(
        wire,
        verify,
        rank,
        timeout,
        doubleBuffer,
        threads,
        bounding,
        stagingBytes,
        OptionalLong.of(bytes));
  }

  /** Workers actually used: {@link #threads()} or, when 0, the available processors. */
  public int effectiveThreads() {
    return threads > 0 ? threads : Runtime.getRuntime().availableProcessors();
  }

  private static int parseInt(String key, String v) {
    try {
      return Integer.parseInt(v.trim());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(key + "='" + v + "' is not an integer", e);
    }
  }

  private static BoundingMode parseBounding(String v) {
    try {
      return BoundingMode.parse(v);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(BOUNDING + ": " + e.getMessage(), e);
    }
  }

  private static Duration parseSeconds(String v) {
    double s;
    try {
      s = Double.parseDouble(v.trim());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          TIMEOUT_SECONDS + "='" + v + "' is not a number of seconds", e);
    }
    if (!(s > 0) || Double.isInfinite(s)) {
      throw new IllegalArgumentException(
          TIMEOUT_SECONDS + "='" + v + "' must be a positive finite number of seconds");
    }
    return Duration.ofNanos(Math.round(s * 1e9));
  }
}
