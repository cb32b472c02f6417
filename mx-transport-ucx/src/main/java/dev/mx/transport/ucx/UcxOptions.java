package dev.mx.transport.ucx;

import dev.mx.api.transport.TransportConfig;
import dev.mx.api.util.Settings;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The knobs of one ucx endpoint, from {@link TransportConfig#properties()} first, then system
 * properties and environment variables.
 *
 * <ul>
 *   <li>{@code ucx.tls} (or {@code -Dmx.ucx.tls}, {@code MX_UCX_TLS}): UCX transports, as {@code
 *       UCX_TLS}. Default {@value #DEFAULT_TLS}: every transport but shared memory (TCP on a plain
 *       host, RDMA where a NIC offers it). Shared memory ({@code sm,tcp}) is faster within one host
 *       but, in UCX 1.13, a peer killed while writing into a survivor's shared-memory FIFO leaves
 *       that FIFO blocked for good, so the survivor can no longer talk to anyone; it is opt-in.
 *       When none of these is set but {@code UCX_TLS} is, UCX's own setting is left alone.
 *   <li>{@code ucx.errorHandling}: {@code peer} (default) lets a dead peer fail the reads that wait
 *       on it; {@code none} is UCX's default mode, in which a transport error may abort the
 *       process.
 *   <li>{@code ucx.maxRegions}: regions one endpoint can register at a time (default {@value
 *       #DEFAULT_MAX_REGIONS}).
 *   <li>{@code ucx.config.NAME}: any UCX setting, as {@code UCX_NAME} would give it, for this
 *       endpoint only.
 * </ul>
 *
 * <p>With peer error handling, two UCX settings get defaults unless the environment sets them:
 * {@code MM_ERROR_HANDLING=y} when shared memory may be used (UCX 1.13 would otherwise leave shared
 * memory out of every endpoint) and {@code KEEPALIVE_INTERVAL=1s} (a dead shared-memory peer is
 * noticed only by keepalive, 20 s by default).
 *
 * @param tls the UCX_TLS value to apply, or null to leave UCX's own
 * @param peerErrorHandling whether endpoints use UCX's peer error handling mode
 * @param maxRegions capacity of the region directory
 * @param ucxConfig UCX settings to apply (names without the {@code UCX_} prefix)
 */
record UcxOptions(
    String tls, boolean peerErrorHandling, int maxRegions, Map<String, String> ucxConfig) {
  static final String TLS = "ucx.tls";
  static final String ERROR_HANDLING = "ucx.errorHandling";
  static final String MAX_REGIONS = "ucx.maxRegions";
  static final String CONFIG_PREFIX = "ucx.config.";
  static final String DEFAULT_TLS = "^sm";
  static final int DEFAULT_MAX_REGIONS = 16384;
  static final String DEFAULT_KEEPALIVE = "1s";

  UcxOptions {
    ucxConfig = Map.copyOf(ucxConfig);
  }

  /** Whether a UCX_TLS value can select a shared-memory ("mm": posix or sysv) transport. */
  static boolean usesSharedMemory(String tls) {
    if (tls == null) {
      return true; // UCX's default is every transport
    }
    String t = tls.trim().toLowerCase(Locale.ROOT);
    boolean negated = t.startsWith("^"); // "^a,b": every transport but a and b
    Set<String> names = new HashSet<>();
    for (String name : (negated ? t.substring(1) : t).split(",")) {
      names.add(name.trim());
    }
    boolean allShared =
        names.contains("sm")
            || names.contains("shm")
            || names.contains("mm")
            || (names.contains("posix") && names.contains("sysv"));
    if (negated) {
      return !allShared;
    }
    return allShared || names.contains("all") || names.contains("posix") || names.contains("sysv");
  }

  private static String blankToNull(String s) {
    return s == null || s.isBlank() ? null : s.trim();
  }

  static UcxOptions from(TransportConfig config, Settings settings) {
    String tls = blankToNull(config.properties().get(TLS));
    if (tls == null) {
      tls = blankToNull(settings.get("mx.ucx.tls", "MX_UCX_TLS"));
    }
    if (tls == null && blankToNull(settings.env("UCX_TLS")) == null) {
      tls = DEFAULT_TLS;
    }
    String mode = config.property(ERROR_HANDLING, "peer").trim().toLowerCase(Locale.ROOT);
    boolean peer =
        switch (mode) {
          case "peer" -> true;
          case "none" -> false;
          default ->
              throw new IllegalArgumentException(
                  ERROR_HANDLING + "='" + mode + "' must be 'peer' or 'none'");
        };
    int maxRegions;
    try {
      maxRegions =
          Integer.parseInt(
              config.property(MAX_REGIONS, String.valueOf(DEFAULT_MAX_REGIONS)).trim());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          MAX_REGIONS + "='" + config.properties().get(MAX_REGIONS) + "' is not an integer", e);
    }
    if (maxRegions < 1 || maxRegions > (1 << 24)) {
      throw new IllegalArgumentException(
          MAX_REGIONS + "=" + maxRegions + " must be between 1 and 16777216");
    }
    Map<String, String> ucx = new LinkedHashMap<>();
    if (peer
        && usesSharedMemory(tls != null ? tls : settings.env("UCX_TLS"))
        && settings.env("UCX_MM_ERROR_HANDLING") == null) {
      // UCX 1.13 does not advertise peer-failure handling on shared memory unless asked to; without
      // it,
      // peer error handling would push every same-host read onto TCP.
      ucx.put("MM_ERROR_HANDLING", "y");
    }
    if (peer && settings.env("UCX_KEEPALIVE_INTERVAL") == null) {
      // A dead shared-memory peer is only noticed by keepalive (default 20 s): notice it within
      // about a second.
      ucx.put("KEEPALIVE_INTERVAL", DEFAULT_KEEPALIVE);
    }
    for (Map.Entry<String, String> e : config.properties().entrySet()) {
      if (e.getKey().startsWith(CONFIG_PREFIX)) {
        ucx.put(
            e.getKey().substring(CONFIG_PREFIX.length()).toUpperCase(Locale.ROOT), e.getValue());
      }
    }
    return new UcxOptions(tls, peer, maxRegions, ucx);
  }
}
