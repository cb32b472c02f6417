package dev.mx.transport.nixl;

import dev.mx.api.transport.TransportConfig;
import dev.mx.api.util.Settings;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * The knobs of one nixl endpoint: {@link TransportConfig#properties()} first, then system
 * properties and environment variables.
 *
 * <ul>
 *   <li>{@code nixl.backend} ({@code -Dmx.nixl.backend}, {@code MX_NIXL_BACKEND}): the backend
 *       plugin, default {@value #DEFAULT_BACKEND}.
 *   <li>{@code nixl.param.NAME} (or {@code -Dmx.nixl.backendParams} / {@code
 *       MX_NIXL_BACKEND_PARAMS} as {@code NAME=VALUE;NAME=VALUE}): backend parameters, e.g. UCX's
 *       {@code num_workers}, {@code ucx_error_handling_mode}, {@code engine_config}. Per-endpoint
 *       properties win.
 *   <li>{@code nixl.progressThread} ({@code -Dmx.nixl.progressThread}, {@code
 *       MX_NIXL_PROGRESS_THREAD}): whether NIXL runs its progress thread (default true: a publisher
 *       must serve reads while nobody calls into it, and over TCP a read needs the target's
 *       progress); false drives progress from the waiting caller.
 *   <li>{@code nixl.progressDelayUs} ({@code -Dmx.nixl.progressDelayUs}, {@code
 *       MX_NIXL_PROGRESS_DELAY_US}): the progress thread's delay, default {@value
 *       #DEFAULT_PROGRESS_DELAY_US} µs (0 busy-polls a whole core).
 *   <li>{@code nixl.threadSync} ({@code -Dmx.nixl.threadSync}, {@code MX_NIXL_THREAD_SYNC}): NIXL's
 *       own locking, {@code NONE}, {@code STRICT} (default) or {@code RW}; mx serializes its calls
 *       per agent either way.
 *   <li>{@code nixl.cachedRequests} ({@code -Dmx.nixl.cachedRequests}, {@code
 *       MX_NIXL_CACHED_REQUESTS}): prepared requests kept for reuse across refits, default {@value
 *       #DEFAULT_CACHED_REQUESTS}.
 * </ul>
 */
record NixlOptions(
    String backend,
    Map<String, String> backendParams,
    boolean progressThread,
    long progressDelayUs,
    int threadSync,
    int cachedRequests) {
  static final String DEFAULT_BACKEND = "UCX";
  static final long DEFAULT_PROGRESS_DELAY_US = 1000;
  static final int DEFAULT_CACHED_REQUESTS = 64;
  static final int THREAD_SYNC_NONE = 0;
  static final int THREAD_SYNC_STRICT = 1;
  static final int THREAD_SYNC_RW = 2;
  static final String PARAM_PREFIX = "nixl.param.";

  NixlOptions {
    backendParams = Map.copyOf(backendParams);
  }

  /**
   * Reads the options.
   *
   * @throws IllegalArgumentException naming the setting when a value is malformed
   */
  static NixlOptions from(TransportConfig config, Settings settings) {
    Map<String, String> p = config.properties();
    String backend =
        first(
            p.get("nixl.backend"),
            settings.get("mx.nixl.backend", "MX_NIXL_BACKEND"),
            DEFAULT_BACKEND);
    Map<String, String> params = new LinkedHashMap<>();
    String list = settings.get("mx.nixl.backendParams", "MX_NIXL_BACKEND_PARAMS");
    if (list != null && !list.isBlank()) {
      for (String kv : list.split(";")) {
        if (kv.isBlank()) {
          continue;
        }
        int eq = kv.indexOf('=');
        if (eq <= 0) {
          throw new IllegalArgumentException(
              "mx.nixl.backendParams / MX_NIXL_BACKEND_PARAMS entry '"
                  + kv.trim()
                  + "' is not NAME=VALUE");
        }
        params.put(kv.substring(0, eq).trim(), kv.substring(eq + 1).trim());
      }
    }
    p.forEach(
        (k, v) -> {
          if (k.startsWith(PARAM_PREFIX) && k.length() > PARAM_PREFIX.length()) {
            params.put(k.substring(PARAM_PREFIX.length()), v);
          }
        });
    boolean progressThread =
        bool(
            "nixl.progressThread",
            first(
                p.get("nixl.progressThread"),
                settings.get("mx.nixl.progressThread", "MX_NIXL_PROGRESS_THREAD"),
                "true"));
    long delay =
        number(
            "nixl.progressDelayUs",
            first(
                p.get("nixl.progressDelayUs"),
                settings.get("mx.nixl.progressDelayUs", "MX_NIXL_PROGRESS_DELAY_US"),
                Long.toString(DEFAULT_PROGRESS_DELAY_US)));
    String sync =
        first(
            p.get("nixl.threadSync"),
            settings.get("mx.nixl.threadSync", "MX_NIXL_THREAD_SYNC"),
            "STRICT");
    int threadSync =
        switch (sync.trim().toUpperCase(Locale.ROOT)) {
          case "NONE" -> THREAD_SYNC_NONE;
          case "STRICT" -> THREAD_SYNC_STRICT;
          case "RW" -> THREAD_SYNC_RW;
          default ->
              throw new IllegalArgumentException(
                  "nixl.threadSync '" + sync + "' is not NONE, STRICT or RW");
        };
    long cached =
        number(
            "nixl.cachedRequests",
            first(
                p.get("nixl.cachedRequests"),
                settings.get("mx.nixl.cachedRequests", "MX_NIXL_CACHED_REQUESTS"),
                Integer.toString(DEFAULT_CACHED_REQUESTS)));
    return new NixlOptions(
        backend.trim(), params, progressThread, delay, threadSync, (int) Math.min(cached, 1 << 20));
  }

  private static String first(String a, String b, String fallback) {
    if (a != null && !a.isBlank()) {
      return a;
    }
    return b != null && !b.isBlank() ? b : fallback;
  }

  private static boolean bool(String name, String v) {
    return switch (v.trim().toLowerCase(Locale.ROOT)) {
      case "1", "true", "yes", "on" -> true;
      case "0", "false", "no", "off" -> false;
      default -> throw new IllegalArgumentException(name + " '" + v + "' is not a boolean");
    };
  }

  private static long number(String name, String v) {
    try {
      long n = Long.parseLong(v.trim());
      if (n < 0) {
        throw new IllegalArgumentException(name + " must not be negative, got " + n);
      }
      return n;
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(name + " '" + v + "' is not a whole number", e);
    }
  }
}
