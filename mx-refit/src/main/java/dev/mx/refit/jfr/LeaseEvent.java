package dev.mx.refit.jfr;

import jdk.jfr.Category;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;

/** A receiver's lease on a weight version was acquired, released or lost. */
@Name("dev.mx.Lease")
@Label("mx Lease")
@Category({"mx", "Refit"})
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
