package dev.mx.refit.jfr;

import jdk.jfr.Category;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;

/** A shard that did not verify; nothing of the step was installed. */
@Name("dev.mx.VerificationFailure")
@Label("mx Verification Failure")
@Category({"mx", "Refit"})
public final class VerificationFailureEvent extends Event {
  @Label("Rank")
  public int rank;

  @Label("Step")
  public long step;

  @Label("Source")
  public String source;

  @Label("Peer")
  public String peer;

  @Label("Detail")
  public String detail;
}
