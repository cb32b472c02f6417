package dev.mx.metadata;

import dev.mx.api.annotation.Stable;
import dev.mx.api.error.MxException;

/**
 * The READY publishers of an identity do not form one consistent trainer job: their declared
 * topology differs from the receiver's, two claim one rank, one claims a rank outside the job, or
 * their tables carry different steps. The message names the publishers (and topologies or steps)
 * involved.
 */
@Stable
public class InconsistentSourcesException extends MxException {
  private static final long serialVersionUID = 1L;

  public InconsistentSourcesException(String message) {
    super(message);
  }
}
