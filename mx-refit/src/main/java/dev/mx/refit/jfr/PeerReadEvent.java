package dev.mx.refit.jfr;

import dev.mx.api.annotation.Internal;
import dev.mx.api.transport.ReadDescriptor;
import java.util.List;
import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/** One peer's reads on the pipelined wire: its duration is the reads'. */
@Name("dev.mx.PeerRead")
@Label("mx Peer Read")
@Description(
    "The reads of one refit from one peer on the pipelined wire; its duration is the time those reads took.")
@Category({"mx", "Refit"})
// Where the event is committed says nothing the fields do not: no stack trace to record.
@StackTrace(false)
@Internal
public final class PeerReadEvent extends Event {
  @Label("Peer")
  public String peer;

  @Label("Bytes")
  @DataAmount
  public long bytes;

  @Label("Descriptors")
  public long descriptors;

  /**
   * Begins the event of reading {@code reads} from {@code peer}; null when no recording wants it
   * (then nothing is counted).
   */
  public static PeerReadEvent start(String peer, List<ReadDescriptor> reads) {
    PeerReadEvent e = new PeerReadEvent();
    if (!e.isEnabled()) {
      return null;
    }
    e.peer = peer;
    e.descriptors = reads.size();
    long n = 0;
    for (ReadDescriptor r : reads) {
      n += r.nbytes();
    }
    e.bytes = n;
    e.begin();
    return e;
  }

  /** Ends and commits an event from {@link #start} (null: nothing to do). */
  public static void finish(PeerReadEvent e) {
    if (e != null) {
      e.commit();
    }
  }
}
