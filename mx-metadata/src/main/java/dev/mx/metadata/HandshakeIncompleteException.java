package dev.mx.metadata;

import dev.mx.api.annotation.Stable;
import dev.mx.api.error.MxException;
import java.util.List;

/**
 * The handshake budget ran out before every planned peer answered (ModelExpress; ARCHITECTURE
 * §7.4). The message lists every outstanding peer as {@code agent@endpoint (attempts, last error)}.
 */
@Stable
public class HandshakeIncompleteException extends MxException {
  private static final long serialVersionUID = 1L;

  /**
   * A peer that never answered: how often it was dialed and the last failure (null if never
   * dialed).
   */
  public record Outstanding(String agent, String endpoint, int attempts, Throwable lastError) {
    @Override
    public String toString() {
      return agent
          + "@"
          + endpoint
          + " ("
          + attempts
          + " attempt(s), last error: "
          + (lastError == null
              ? "none"
              : lastError.getClass().getSimpleName() + ": " + lastError.getMessage())
          + ")";
    }
  }

  private final int peers;
  private final int answered;
  private final transient List<Outstanding> outstanding;

  public HandshakeIncompleteException(
      double seconds, int peers, int answered, List<Outstanding> outstanding) {
    super(
        "P2P handshake incomplete after "
            + seconds
            + " s: "
            + answered
            + " of "
            + peers
            + " peer(s) answered. Outstanding: "
            + String.join("; ", outstanding.stream().map(Outstanding::toString).toList()));
    this.peers = peers;
    this.answered = answered;
    this.outstanding = List.copyOf(outstanding);
    if (!outstanding.isEmpty() && outstanding.getLast().lastError() != null) {
      initCause(outstanding.getLast().lastError());
    }
  }

  public int peers() {
    return peers;
  }

  public int answered() {
    return answered;
  }

  /** The peers that never answered, in queue order. */
  public List<Outstanding> outstanding() {
    return outstanding;
  }
}
