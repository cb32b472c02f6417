package dev.mx.api.transport;

import dev.mx.api.annotation.Internal;
import dev.mx.api.error.TransportException;
import java.lang.foreign.MemorySegment;

/**
 * The one error for memory a transport cannot read, shared by the interface default and the backend
 * kit's skeleton. Internal: public only so that the kit, in its own module, throws the same error.
 */
@Internal
public final class MemoryKinds {
  private MemoryKinds() {}

  public static TransportException unsupported(
      String transport, MemorySegment region, MemoryKind kind) {
    return new TransportException(
        null,
        transport
            + " transport cannot register "
            + kind
            + " memory (region 0x"
            + Long.toHexString(region.address())
            + "+"
            + region.byteSize()
            + "): it reads host memory only. Device"
            + " memory needs a transport that reads it (cuda-ipc on one host, nixl), or weights staged through host"
            + " memory (--device host)");
  }
}
