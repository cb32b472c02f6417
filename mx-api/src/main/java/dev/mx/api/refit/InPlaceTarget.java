package dev.mx.api.refit;

import java.lang.foreign.MemorySegment;

/**
 * The engine's live weights, written in place by a receiver: reads land straight in these
 * parameters (staged bytes are verified before they are copied in), so a refit holds no second copy
 * of the weights, only a bounded staging budget.
 *
 * <p>What a reader of the live weights may observe: between {@link #writing} and the following
 * {@link #installed} or {@link #torn} the parameters hold a mix of the previous and the new step,
 * so the engine must not read them then (RL engines pause generation while weights update). After
 * {@link #installed} every byte is the new step's and verified. After {@link #torn} the named step
 * did not complete; the receiver (or its caller) restores the previous step when the publishers
 * still hold it, and otherwise the next successful refit repairs every parameter.
 *
 * <p>The owner registers the live memory with the receiver's transport (registrations must not
 * overlap, so the receiver does not) and keeps it alive while the receiver lives.
 */
public interface InPlaceTarget {

  /**
   * The live memory of parameter {@code name}, exactly its local byte size.
   *
   * @throws IllegalArgumentException when the engine has no such parameter
   */
  MemorySegment parameter(String name);

  /**
   * Memory beside the live parameters that receivers writing this target may stage through
   * (registered with their transport together with the parameters; the receivers of one target take
   * turns, never use it at once), or {@link MemorySegment#NULL} (the default): each receiver then
   * allocates its own staging at its first refit, on that refit's time. An engine that sets it
   * aside at start takes the allocation and its page faults off the first refit.
   */
  default MemorySegment staging() {
    return MemorySegment.NULL;
  }

  /** The receiver is about to write step {@code step} into the live parameters. */
  default void writing(long step) {}

  /** Every byte of step {@code step} is in place and verified. */
  default void installed(long step) {}

  /**
   * Step {@code step} failed after the receiver began writing it: until a later {@link #installed}
   * the live parameters may hold a mix of steps.
   */
  default void torn(long step, RuntimeException cause) {}
}
