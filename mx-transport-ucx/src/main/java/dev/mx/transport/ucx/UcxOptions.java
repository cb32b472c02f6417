package dev.mx.transport.ucx;

import dev.mx.api.transport.TransportConfig;
import dev.mx.api.util.Settings;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * The knobs of one ucx endpoint, from {@link TransportConfig#properties()} first, then system properties and
 * environment variables.
 *
 * <ul>
 *   <li>{@code ucx.tls} (or {@code -Dmx.ucx.tls}, {@code MX_UCX_TLS}): UCX transports, as {@code UCX_TLS}.
 *       Default {@value #DEFAULT_TLS}: shared memory within a host, TCP between hosts. When none of these is
 *       set but {@code UCX_TLS} is, UCX's own setting is left alone.
 *   <li>{@code ucx.errorHandling}: {@code peer} (default) lets a dead peer fail the reads that wait on it;
 *       {@code none} is UCX's default mode, in which a transport error may abort the process.
 *   <li>{@code ucx.maxRegions}: regions one endpoint can register at a time (default {@value #DEFAULT_MAX_REGIONS}).
 *   <li>{@code ucx.config.NAME}: any UCX setting, as {@code UCX_NAME} would give it, for this endpoint only.
 * </ul>
 *
 * @param tls the UCX_TLS value to apply, or null to leave UCX's own
 * @param peerErrorHandling whether endpoints use UCX's peer error handling mode
 * @param maxRegions capacity of the region directory
 * @param ucxConfig UCX settings to apply (names without the {@code UCX_} prefix)
 */
record UcxOptions(String tls, boolean peerErrorHandling, int maxRegions, Map<String, String> ucxConfig) {
  static final String TLS = "ucx.tls";
  static final String ERROR_HANDLING = "ucx.errorHandling";
  static final String MAX_REGIONS = "ucx.maxRegions";
  static final String CONFIG_PREFIX = "ucx.config.";
  static final String DEFAULT_TLS = "sm,tcp";
  static final int DEFAULT_MAX_REGIONS = 16384;

  UcxOptions {
    ucxConfig = Map.copyOf(ucxConfig);
  }

  static UcxOptions from(TransportConfig config, Settings settings) {
    String tls = config.properties().get(TLS);
    if (tls == null) {
      tls = settings.get("mx.ucx.tls", "MX_UCX_TLS");
    }
    if (tls == null && settings.env("UCX_TLS") == null) {
      tls = DEFAULT_TLS;
    }
    String mode = config.property(ERROR_HANDLING, "peer").trim().toLowerCase(Locale.ROOT);
    boolean peer = switch (mode) {
      case "peer" -> true;
      case "none" -> false;
      default -> throw new IllegalArgumentException(ERROR_HANDLING + "='" + mode + "' must be 'peer' or 'none'");
    };
    int maxRegions;
    try {
      maxRegions = Integer.parseInt(config.property(MAX_REGIONS, String.valueOf(DEFAULT_MAX_REGIONS)).trim());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(MAX_REGIONS + "='" + config.properties().get(MAX_REGIONS) + "' is not an integer", e);
    }
    if (maxRegions < 1 || maxRegions > (1 << 24)) {
      throw new IllegalArgumentException(MAX_REGIONS + "=" + maxRegions + " must be between 1 and 16777216");
    }
    Map<String, String> ucx = new LinkedHashMap<>();
    if (peer && settings.env("UCX_MM_ERROR_HANDLING") == null) {
      // UCX 1.13 does not advertise peer-failure handling on shared memory unless asked to; without it,
      // peer error handling would push every same-host read onto TCP.
      ucx.put("MM_ERROR_HANDLING", "y");
    }
    for (Map.Entry<String, String> e : config.properties().entrySet()) {
      if (e.getKey().startsWith(CONFIG_PREFIX)) {
        ucx.put(e.getKey().substring(CONFIG_PREFIX.length()).toUpperCase(Locale.ROOT), e.getValue());
      }
    }
    return new UcxOptions(tls, peer, maxRegions, ucx);
  }
}
