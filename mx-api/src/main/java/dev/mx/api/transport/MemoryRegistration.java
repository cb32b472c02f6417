package dev.mx.api.transport;

import java.lang.foreign.MemorySegment;

/**
 * A native memory region registered with a transport: peers may read from it, and local reads may
 * write into it. Closing deregisters it (idempotently); the memory itself stays owned by the
 * caller.
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

  /**
   * Where the memory lives. Host memory unless a device backend says otherwise; a device region's
   * {@link #segment()} holds the device address and length and must not be dereferenced on the CPU.
   */
  default MemoryKind memoryKind() {
    return MemoryKind.HOST;
  }

  @Override
  void close();

  /**
   * {@code registration} reporting {@code kind} as its {@link #memoryKind()} (for memory a caller
   * knows to be a device's while the registration it got does not say so); closing closes {@code
   * registration}.
   */
  static MemoryRegistration ofKind(MemoryRegistration registration, MemoryKind kind) {
    java.util.Objects.requireNonNull(registration, "registration");
    java.util.Objects.requireNonNull(kind, "kind");
    return new MemoryRegistration() {
      @Override
      public MemorySegment segment() {
        return registration.segment();
      }

      @Override
      public MemoryKind memoryKind() {
        return kind;
      }

      @Override
      public void close() {
        registration.close();
      }

      @Override
      public String toString() {
        return kind + " " + registration;
      }
    };
  }
}
