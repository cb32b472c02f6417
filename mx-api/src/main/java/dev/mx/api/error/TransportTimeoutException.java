package dev.mx.api.error;

/** Reads did not complete within the call's timeout. */
public class TransportTimeoutException extends TransportException {
  private static final long serialVersionUID = 1L;

  public TransportTimeoutException(String peer, String message) {
    super(peer, message);
  }
}
