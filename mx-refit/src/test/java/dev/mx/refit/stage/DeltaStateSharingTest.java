package dev.mx.refit.stage;

import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Receivers writing one set of live weights share one delta state (else one would skip reads of
 * bytes another tore); other live weights, even ones that compare equal, have their own.
 */
class DeltaStateSharingTest {

  @Test
  void oneStatePerTargetByIdentity() {
    List<String> target = List.of("a");
    List<String> equalButOther = List.of("a");
    assertSame(DeltaState.of(target), DeltaState.of(target));
    assertNotSame(DeltaState.of(target), DeltaState.of(equalButOther));
  }
}
