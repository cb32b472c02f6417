package dev.mx.refit.jfr;

import dev.mx.api.annotation.Internal;
import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/** A receiver's lease on a weight version was acquired, released or lost. */
@Name("dev.mx.Lease")
@Label("mx Lease")
@Description(
    "A receiver acquired, released or lost its lease on a weight version: while leased, the publisher does not rewrite that version's buffers.")
@Category({"mx", "Refit"})
// Where the event is committed says nothing the fields do not: no stack trace to record.
@StackTrace(false)
@Internal
public final class LeaseEvent extends Event {
  @Label("Model")
  public String model;

  @Label("Version")
  public String versionId;

  @Label("Holder")
  public String holder;

  @Label("Action")
  public String action;
}
