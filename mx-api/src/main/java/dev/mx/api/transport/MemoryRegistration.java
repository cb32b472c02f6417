package dev.mx.api.transport;

import java.lang.foreign.MemorySegment;

/**
 * A native memory region registered with a transport: peers may read from it, and local reads may write
 * into it. Closing deregisters it (idempotently); the memory itself stays owned by the caller.
 */
public interface MemoryRegistration extends AutoCloseable {

  /** The registered memory. */
  MemorySegment segment();

  default long address() {
    return segment().address();
  }

  default long length() {
    return segment().byteSize();
  }

  @Override
  void close();
}
