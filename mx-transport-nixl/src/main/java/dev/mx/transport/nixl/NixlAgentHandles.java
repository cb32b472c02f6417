package dev.mx.transport.nixl;

import dev.mx.api.error.TransportException;
import java.lang.foreign.MemorySegment;

/**
 * The NIXL handles an endpoint owns: its agent, the backend plugin it reads through, and, when the
 * caller drives progress, the notification map it polls with (NULL otherwise).
 */
record NixlAgentHandles(MemorySegment agent, MemorySegment backend, MemorySegment notifMap) {

  /**
   * Creates agent {@code session} as {@code options} configure it, then its backend; on a failure
   * nothing is left behind and the error says what NIXL could load.
   */
  static NixlAgentHandles open(NixlLibrary lib, String session, NixlOptions options) {
    MemorySegment a;
    try {
      a =
          lib.createConfiguredAgent(
              session, options.progressThread(), options.threadSync(), options.progressDelayUs());
    } catch (NixlStatusException e) {
      throw new TransportException(
          null,
          "nixl transport: could not create NIXL agent '"
              + session
              + "' ("
              + lib.origin()
              + "): "
              + e.getMessage(),
          e);
    }
    MemorySegment b;
    MemorySegment map = MemorySegment.NULL;
    try {
      b = lib.createBackend(a, options.backend(), options.backendParams());
      if (!options.progressThread()) {
        map = lib.createNotifMap();
      }
    } catch (RuntimeException e) {
      String plugins;
      try {
        plugins = lib.availablePlugins(a).toString();
      } catch (RuntimeException listing) {
        plugins = "unknown (" + listing.getMessage() + ")";
      }
      lib.destroyAgent(a);
      throw new TransportException(
          null,
          "nixl transport: could not create the "
              + options.backend()
              + " backend of agent '"
              + session
              + "' with parameters "
              + options.backendParams()
              + ": "
              + e.getMessage()
              + " (plugins NIXL can load: "
              + plugins
              + ")",
          e);
    }
    return new NixlAgentHandles(a, b, map);
  }
}
