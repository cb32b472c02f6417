package dev.mx.transport.testsuite;

/**
 * What a transport can do beyond the core every backend must pass. A conformance subclass declares
 * each with {@link AbstractTransportConformanceTest#hasBehavior}; the default is {@link
 * #defaultValue()}. A "yes" runs the positive test; a "no" runs the same scenario and asserts that
 * it fails with the specific error documented on the constant — never a skip.
 */
public enum TransportBehavior {

  /**
   * Reads from a publisher endpoint that lives in another process (and so, with the right network,
   * on another host). Default yes. "No" must fail with a {@link
   * dev.mx.api.error.TransportException} naming the peer session, at {@code connect} or at the
   * first read.
   */
  SUPPORTS_PEERS_IN_OTHER_PROCESSES(true),

  /**
   * {@link dev.mx.api.transport.Transport#allocate} returns registered memory that peers can read.
   * Default yes (the SPI's default method allocates off-heap and registers). "No" must throw {@link
   * UnsupportedOperationException} or a {@link dev.mx.api.error.TransportException} naming the
   * transport.
   */
  SUPPORTS_ALLOCATION(true),

  /**
   * A read of memory its publisher has deregistered fails. Default yes. The flag must agree with
   * the endpoint's {@link dev.mx.api.transport.Transport#revokesDeregisteredMemory()}. "Yes" must
   * fail such a read with a {@link dev.mx.api.error.TransportException} and move nothing. "No" (a
   * real NIXL over shared memory, CMA or TCP keeps serving it) must declare {@code false} there,
   * and the read either fails with a {@code TransportException} (a backend that does revoke, such
   * as RDMA) or delivers exactly the bytes the memory still holds: never other bytes, never a
   * crash.
   */
  REVOKES_DEREGISTERED_MEMORY(true),

  /**
   * Registers and reads device (GPU) memory; the subclass supplies device buffers by overriding
   * {@link AbstractTransportConformanceTest#deviceMemory}. Default no. "No" with a device buffer
   * available must reject its registration with a {@link dev.mx.api.error.TransportException}
   * saying "device"; "no" without one asserts that the subclass supplies none (a CPU-only machine
   * cannot produce the negative).
   */
  SUPPORTS_DEVICE_MEMORY(false),

  /**
   * Moves the bytes of a read from memory the publisher allocated ({@link
   * dev.mx.api.transport.Transport#allocate}) with the calling thread's CPU, through the {@link
   * dev.mx.api.transport.LandingFold} the caller bound for that read ({@link
   * dev.mx.api.transport.LandingFolds#during}): each such read is handed to its fold exactly once,
   * on the calling thread, with exactly its source bytes and a destination of its size. Default no.
   * "No" (hardware or the kernel moves the bytes) must land every byte exactly and never call a
   * fold.
   */
  FOLDS_CPU_COPIES(false);

  private final boolean defaultValue;

  TransportBehavior(boolean defaultValue) {
    this.defaultValue = defaultValue;
  }

  /** What a subclass that does not mention this behaviour is taken to support. */
  public boolean defaultValue() {
    return defaultValue;
  }
}
