package dev.mx.transport.nixl;

/**
 * A {@code nixl_capi_*} call returned a non-zero status; {@link NixlTransport} turns it into a
 * transport error.
 */
final class NixlStatusException extends RuntimeException {
  private static final long serialVersionUID = 1L;
  private final String function;
  private final int status;

  NixlStatusException(String function, int status) {
    super("nixl_capi_" + function + " returned " + NixlStatus.describe(status));
    this.function = function;
    this.status = status;
  }

  String function() {
    return function;
  }

  int status() {
    return status;
  }
}
