package dev.mx.refit.stage;

import dev.mx.api.annotation.Internal;
import dev.mx.api.transport.LandingFold;
import java.util.List;

/**
 * Work that needs only the bytes one read brings (the digests of the regions it lands in part). It
 * is that read's {@link LandingFold}: a transport that copies with the CPU runs it in the same pass
 * as the copy. Once the read has landed for the last time, {@link #afterLanding} gives what is
 * left.
 */
@Internal
public interface LandedWork extends LandingFold {

  /** Whether the transport moved the read through this fold. */
  boolean folded();

  /**
   * The work left once the read landed; called once, after its last landing. {@code inline} is
   * cheap (comparing digests the fold finished) and runs on the wire thread at once; {@code
   * offloaded} (digesting landed bytes, replaying a verified staged shard) goes to a worker, only
   * after {@code inline} succeeded.
   */
  Left afterLanding();

  /** What is left of a read's work once it landed. */
  record Left(List<Runnable> inline, List<Runnable> offloaded) {
    public static final Left NONE = new Left(List.of(), List.of());
  }
}
