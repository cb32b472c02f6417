package dev.mx.refit.version;

import dev.mx.api.annotation.Stable;
import dev.mx.api.error.MxException;
import java.util.List;

/**
 * A trainer could not get a buffer set back in time: the version it holds is still leased by
 * receivers (or still READY and not yet released). The message names the version and the
 * leaseholders.
 */
@Stable
public class BuffersLeasedException extends MxException {
  private static final long serialVersionUID = 1L;

  private final String versionId;
  private final List<String> holders;

  public BuffersLeasedException(String message, String versionId, List<String> holders) {
    super(message);
    this.versionId = versionId;
    this.holders = List.copyOf(holders);
  }

  /** The version whose memory could not be reclaimed. */
  public String versionId() {
    return versionId;
  }

  /** Who still held leases on it when the wait ended. */
  public List<String> holders() {
    return holders;
  }
}
