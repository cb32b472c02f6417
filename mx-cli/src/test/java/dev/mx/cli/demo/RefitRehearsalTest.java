package dev.mx.cli.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The rehearsal runs its two verified in-memory refits to the end with the demo's default dtypes,
 * wire and verification, and with the f32 of the tests: each step installs, every byte verified (a
 * digest mismatch or any other failure would throw).
 */
class RefitRehearsalTest {

  private static WorkerSpec real(String dtype) {
    return new WorkerSpec(
        "receiver",
        0,
        "llama-3.2-1b",
        Map.of("tp", 4),
        Map.of("tp", 2),
        "shm",
        "memory:not-the-rehearsals",
        "mx-demo",
        dtype,
        dtype,
        "fused",
        "all",
        60,
        1,
        "host",
        0,
        "in-place",
        1,
        0,
        null,
        null,
        false,
        null,
        null);
  }

  @Test
  void rehearsesTwoRefitsAndInstallsTheSecond() throws Exception {
    assertEquals(1, RefitRehearsal.run(real("bf16")));
    assertEquals(1, RefitRehearsal.run(real("f32")));
  }
}
