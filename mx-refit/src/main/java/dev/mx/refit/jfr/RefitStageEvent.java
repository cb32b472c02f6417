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
 * One timed stage of a refit, begun and committed on the thread that ran it ({@link StageClock}),
 * so its start time and duration are the stage's own; {@code stageTime} equals the duration. A
 * stage that runs once per landing batch (the wire's) gives one event per batch. Stages of an
 * explicit {@code prepare()} carry step -1; a stage only a custom wire policy times is committed
 * when the refit ends, with {@code stageTime} alone.
 */
@Name("dev.mx.RefitStage")
@Label("mx Refit Stage")
@Description(
    "One timed stage of a refit (prepare, descriptors, wire, verify, install ...), recorded where and when it ran; stageTime is how long it took.")
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
