package dev.mx.refit.jfr;

import dev.mx.api.annotation.Internal;
import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;
import jdk.jfr.Timespan;

/** A version follower's wait for a readable version (committed at its install). */
@Name("dev.mx.VersionWait")
@Label("mx Version Wait")
@Description(
    "A version follower waited for its next readable weight version; committed when that version is installed.")
@Category({"mx", "Refit"})
// Where the event is committed says nothing the fields do not: no stack trace to record.
@StackTrace(false)
@Internal
public final class VersionWaitEvent extends Event {
  @Label("Model")
  public String model;

  @Label("Step")
  public long step;

  @Label("Waited")
  @Timespan(Timespan.NANOSECONDS)
  public long waited;
}
