package dev.mx.refit.fanout;

import dev.mx.api.annotation.Experimental;
import dev.mx.api.refit.Capture;
import dev.mx.api.refit.GeometrySource;
import dev.mx.api.refit.ManifestEntry;
import java.util.List;
import java.util.Objects;

/**
 * A geometry source that remembers its last capture and the manifest it was made for: what an
 * engine's installed weights hold, for {@link InstalledPublisher#publish} to serve them. Give it to
 * the receivers (and a checkpoint install) in place of the engine's own geometry.
 */
@Experimental
public final class RecordingGeometry implements GeometrySource {
  /** One capture and the source tensors it was made for. */
  public record Recorded(Capture capture, List<ManifestEntry> manifest) {}

  private final GeometrySource delegate;
  private volatile Recorded last;

  public RecordingGeometry(GeometrySource delegate) {
    this.delegate = Objects.requireNonNull(delegate, "delegate");
  }

  @Override
  public Capture capture(List<ManifestEntry> manifest) {
    Capture c = delegate.capture(manifest);
    last = new Recorded(c, List.copyOf(manifest));
    return c;
  }

  /**
   * The last capture, to serve the step it installed.
   *
   * @throws IllegalStateException when nothing was captured yet (no refit planned)
   */
  public Recorded last() {
    Recorded r = last;
    if (r == null) {
      throw new IllegalStateException(
          "no geometry was captured yet: installed weights are served after a refit planned them");
    }
    return r;
  }

  /**
   * Publishes {@code step} through {@code publisher} with the last capture; returns the seconds it
   * took (digesting the installed bytes, landing the slot).
   */
  public double serve(InstalledPublisher publisher, long step) {
    long t0 = System.nanoTime();
    Recorded r = last();
    publisher.publish(step, r.capture(), r.manifest());
    return (System.nanoTime() - t0) / 1e9;
  }
}
