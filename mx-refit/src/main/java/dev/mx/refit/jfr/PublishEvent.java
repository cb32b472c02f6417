package dev.mx.refit.jfr;

import dev.mx.api.annotation.Internal;
import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;
import jdk.jfr.Timespan;

/** A trainer rank's slot of a step landed in the version store. */
@Name("dev.mx.Publish")
@Label("mx Publish")
@Description(
    "A trainer rank's slot of a step landed; publishTime is the whole publish, from its start to"
        + " the slot in the store, and state the version's then (READY when it was the last slot).")
@Category({"mx", "Publish"})
// Where the event is committed says nothing the fields do not: no stack trace to record.
@StackTrace(false)
@Internal
public final class PublishEvent extends jdk.jfr.Event {
  @Label("Model")
  public String model;

  @Label("Slot")
  public String slot;

  @Label("Step")
  public long step;

  @Label("Version State")
  public String state;

  @Label("Publish Duration")
  @Timespan(Timespan.NANOSECONDS)
  public long publishTime;
}
