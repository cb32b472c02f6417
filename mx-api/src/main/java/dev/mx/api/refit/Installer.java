package dev.mx.api.refit;

import java.lang.foreign.MemorySegment;
import java.util.Map;

/**
 * Hands verified receive buffers to the engine. Called only after every read, re-slice, cast and
 * digest check of the step succeeded; never on a failed refit.
 */
public interface Installer {

  void install(long step, Map<String, MemorySegment> receiveBuffers);
}
