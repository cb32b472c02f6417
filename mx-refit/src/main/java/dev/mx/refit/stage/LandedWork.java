package dev.mx.refit.stage;

import dev.mx.api.annotation.Internal;
import dev.mx.api.transport.LandingFold;
import java.util.List;

/**
 * Work that needs only the bytes one read brings (the digest of the pieces of shards it lands). It
 * is that read's {@link LandingFold}: a transport that copies with the CPU runs it in the same pass
 * as the copy. Once the read has landed for the last time, {@link #afterLanding} gives what is
 * left: a cheap comparison of finished digests when the fold ran, the whole digest from memory when
 * it did not.
 */
@Internal
public interface LandedWork extends LandingFold {

  /** Whether the transport moved the read through this fold (so what is left is cheap). */
  boolean folded();

  /** The tasks left once the read landed; called once, after its last landing. */
  List<Runnable> afterLanding();
}
