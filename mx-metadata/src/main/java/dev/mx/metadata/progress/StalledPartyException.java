package dev.mx.metadata.progress;

import dev.mx.api.annotation.Stable;
import dev.mx.api.error.MxException;

/**
 * A party a waiter waited on made no progress (or never heartbeated) within the stall limit: the
 * message names it and what it was last doing.
 */
@Stable
public final class StalledPartyException extends MxException {
  private final String party;
  private final String lastPhase;

  public StalledPartyException(String message, String party, String lastPhase) {
    super(message);
    this.party = party;
    this.lastPhase = lastPhase;
  }

  /** The party's name (a trainer rank's slot). */
  public String party() {
    return party;
  }

  /** Its phase at its last heartbeat seen; empty when none was seen. */
  public String lastPhase() {
    return lastPhase;
  }
}
