package dev.mx.refit.jfr;

import dev.mx.api.annotation.Internal;
import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;
import jdk.jfr.Timespan;

/** One timed stage of a trainer rank's publish of a step (committed when the stage ended). */
@Name("dev.mx.PublishStage")
@Label("mx Publish Stage")
@Description(
    "One stage of a trainer rank publishing a step: waiting for the other ranks or for readers'"
        + " leases, writing, digesting, landing the slot; stageTime is how long it took.")
@Category({"mx", "Publish"})
// Where the event is committed says nothing the fields do not: no stack trace to record.
@StackTrace(false)
@Internal
public final class PublishStageEvent extends jdk.jfr.Event {
  @Label("Model")
  public String model;

  @Label("Slot")
  public String slot;

  @Label("Step")
  public long step;

  @Label("Stage")
  public String stage;

  @Label("Stage Duration")
  @Timespan(Timespan.NANOSECONDS)
  public long stageTime;
}
