package dev.mx.refit.jfr;

import jdk.jfr.Category;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.Timespan;

/** A version follower's wait for a readable version (committed at its install). */
@Name("dev.mx.VersionWait")
@Label("mx Version Wait")
@Category({"mx", "Refit"})
public final class VersionWaitEvent extends Event {
  @Label("Model")
  public String model;

  @Label("Step")
  public long step;

  @Label("Waited")
  @Timespan(Timespan.NANOSECONDS)
  public long waited;
}
