package dev.mx.api.error;

/** No provider of the requested kind is usable; the message lists every provider found and why. */
public class NoProviderException extends MxException {
  private static final long serialVersionUID = 1L;

  public NoProviderException(String message) {
    super(message);
  }
}
