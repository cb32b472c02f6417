package dev.mx.api.error;

/** A transport could not move bytes: a bad descriptor, an unreachable or dead peer, a timeout. */
public class TransportException extends MxException {
  private static final long serialVersionUID = 1L;
  private final String peer;

  public TransportException(String peer, String message) {
    super(message);
    this.peer = peer;
  }

  public TransportException(String peer, String message, Throwable cause) {
    super(message, cause);
    this.peer = peer;
  }

  /** The session or peer at fault; null when the failure is local. */
  public String peer() {
    return peer;
  }
}
