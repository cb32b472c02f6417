package dev.mx.refit.jfr;

import dev.mx.api.annotation.Internal;
import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/** A refit of one rank: its duration is the refit's, from start to install or failure. */
@Name("dev.mx.Refit")
@Label("mx Refit")
@Description(
    "One rank's refit of one step, from its start to the install or the failure, with the bytes and descriptors it read.")
@Category({"mx", "Refit"})
// Where the event is committed says nothing the fields do not: no stack trace to record.
@StackTrace(false)
@Internal
public final class RefitEvent extends Event {
  @Label("Rank")
  public int rank;

  @Label("Step")
  public long step;

  @Label("Transport")
  public String transport;

  @Label("Bytes")
  @DataAmount
  public long bytes;

  @Label("Descriptors")
  public long descriptors;

  @Label("Outcome")
  public String outcome;

  @Label("Failure")
  public String failure;
}
