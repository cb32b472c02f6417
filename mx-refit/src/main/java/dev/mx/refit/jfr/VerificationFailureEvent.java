package dev.mx.refit.jfr;

import dev.mx.api.annotation.Internal;
import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/** A shard that did not verify; nothing of the step was installed. */
@Name("dev.mx.VerificationFailure")
@Label("mx Verification Failure")
@Description(
    "A shard whose digest did not match, or had none where one was required; nothing of the step was installed.")
@Category({"mx", "Refit"})
// Where the event is committed says nothing the fields do not: no stack trace to record.
@StackTrace(false)
@Internal
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
