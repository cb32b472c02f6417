package dev.mx.refit.jfr;

import jdk.jfr.Category;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.Timespan;

/**
 * One timed stage of a finished refit (committed when the refit ends; {@code stageTime} is how long
 * the stage took).
 */
@Name("dev.mx.RefitStage")
@Label("mx Refit Stage")
@Category({"mx", "Refit"})
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
