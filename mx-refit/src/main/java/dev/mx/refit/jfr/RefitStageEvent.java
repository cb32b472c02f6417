package dev.mx.refit.jfr;

import dev.mx.api.annotation.Internal;
import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;
import jdk.jfr.Timespan;

/**
 * One timed stage of a finished refit (committed when the refit ends; {@code stageTime} is how long
 * the stage took).
 */
@Name("dev.mx.RefitStage")
@Label("mx Refit Stage")
@Description(
    "One timed stage of a finished refit (descriptors, wire, verify, install ...); stageTime is how long the stage took.")
@Category({"mx", "Refit"})
// Where the event is committed says nothing the fields do not: no stack trace to record.
@StackTrace(false)
@Internal
public final class RefitStageEvent extends Event {
  @Label("Rank")
  public int rank;

  @Label("Step")
  public long step;

  @Label("Stage")
  public String stage;

  @Label("Stage Duration")
  @Timespan(Timespan.NANOSECONDS)
  public long stageTime;
}
