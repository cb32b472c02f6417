package dev.mx.refit.publish;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** A shard keeps its last-changed step while its digest stays put, per tensor and offset. */
class ChangeLogTest {
  private static final String A = "0".repeat(32);
  private static final String B = "1".repeat(32);

  @Test
  void theStepMovesOnlyWhenTheDigestChanges() {
    ChangeLog log = new ChangeLog();
    long[] top = {0, 0};
    long[] bottom = {4, 0};
    assertEquals(0, log.observe("w", top, A, 0));
    assertEquals(0, log.observe("w", bottom, A, 0));
    assertEquals(0, log.observe("w", top, A, 1));
    assertEquals(1, log.observe("w", bottom, B, 1));
    assertEquals(0, log.observe("w", top, A, 2));
    assertEquals(1, log.observe("w", bottom, B, 2));
    assertEquals(3, log.observe("w", top, B, 3));
    // Another tensor with the same digest is another shard.
    assertEquals(3, log.observe("v", top, A, 3));
  }
}
