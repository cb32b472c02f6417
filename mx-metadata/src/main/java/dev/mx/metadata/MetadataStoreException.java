package dev.mx.metadata;

import dev.mx.api.annotation.Stable;
import dev.mx.api.error.MxException;

/**
 * A metadata store could not carry out an operation: unreachable, unreadable, or no such record.
 */
@Stable
public class MetadataStoreException extends MxException {
  private static final long serialVersionUID = 1L;
  private final String store;

  public MetadataStoreException(String store, String message) {
    super(store + ": " + message);
    this.store = store;
  }

  public MetadataStoreException(String store, String message, Throwable cause) {
    super(store + ": " + message, cause);
    this.store = store;
  }

  /** The store's URI (with any password removed). */
  public String store() {
    return store;
  }
}
