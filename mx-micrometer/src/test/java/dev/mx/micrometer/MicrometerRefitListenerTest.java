package dev.mx.micrometer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import dev.mx.api.metrics.RefitListener;
import dev.mx.api.metrics.RefitListener.LeaseAction;
import dev.mx.api.metrics.RefitListener.Outcome;
import dev.mx.api.metrics.RefitListener.Refit;
import dev.mx.api.metrics.RefitListeners;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The binding's meters after the calls a receiver makes (in the order it makes them). */
class MicrometerRefitListenerTest {

  private static void installedRefit(RefitListener l, Refit r, long bytes, long descriptors) {
    l.refitStarted(r);
    l.stageTimed(r, "wire_fused_s", 0.25);
    l.stageTimed(r, "install_s", 0.5);
    l.shardsVerified(r, 3, 0);
    l.installed(r);
    l.refitFinished(r, new Outcome(true, bytes, descriptors, 1.0, null));
  }

  @Test
  void installedRefitsTimeStagesCountBytesAndMoveTheStepGauge() {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    MicrometerRefitListener l = new MicrometerRefitListener(registry);
    installedRefit(l, new Refit(1, 7, "shm"), 4096, 12);
    installedRefit(l, new Refit(1, 8, "shm"), 4096, 12);
    installedRefit(l, new Refit(0, 8, "shm"), 100, 1);

    var wire =
        registry
            .get(MicrometerRefitListener.STAGE)
            .tags("rank", "1", "transport", "shm", "stage", "wire_fused")
            .timer();
    assertEquals(2, wire.count());
    assertEquals(500, wire.totalTime(TimeUnit.MILLISECONDS), 1e-6);
    var install =
        registry.get(MicrometerRefitListener.STAGE).tags("rank", "1", "stage", "install").timer();
    assertEquals(1000, install.totalTime(TimeUnit.MILLISECONDS), 1e-6);
    // The unit is the timer's, not part of the tag value.
    assertNull(registry.find(MicrometerRefitListener.STAGE).tags("stage", "install_s").timer());
    assertEquals(
        8192, registry.get(MicrometerRefitListener.BYTES).tags("rank", "1").counter().count());
    assertEquals(
        24, registry.get(MicrometerRefitListener.DESCRIPTORS).tags("rank", "1").counter().count());
    assertEquals(
        6,
        registry.get(MicrometerRefitListener.VERIFIED_SHARDS).tags("rank", "1").counter().count());
    assertEquals(
        8, registry.get(MicrometerRefitListener.INSTALLED_STEP).tags("rank", "1").gauge().value());
    assertEquals(
        2,
        registry
            .get(MicrometerRefitListener.REFIT)
            .tags("rank", "1", "outcome", "installed")
            .timer()
            .count());
    assertEquals(
        100, registry.get(MicrometerRefitListener.BYTES).tags("rank", "0").counter().count());
    assertNull(registry.find(MicrometerRefitListener.FAILURES).counter(), "no failure yet");
  }

  @Test
  void aFailedRefitCountsAFailureAndItsPeerWithoutMovingTheGauge() {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    MicrometerRefitListener l = new MicrometerRefitListener(registry);
    installedRefit(l, new Refit(0, 1, "ucx"), 10, 1);
    Refit bad = new Refit(0, 2, "ucx");
    l.refitStarted(bad);
    l.verificationFailed(bad, "q_proj.weight", "trainer-3", "digest mismatch");
    l.refitFinished(bad, new Outcome(false, 0, 0, 0.125, "DigestMismatchException: ..."));

    assertEquals(
        1,
        registry
            .get(MicrometerRefitListener.VERIFICATION_FAILURES)
            .tags("rank", "0", "transport", "ucx", "peer", "trainer-3")
            .counter()
            .count());
    assertEquals(1, registry.get(MicrometerRefitListener.FAILURES).counter().count());
    assertEquals(
        125,
        registry
            .get(MicrometerRefitListener.REFIT)
            .tags("outcome", "failed")
            .timer()
            .totalTime(TimeUnit.MILLISECONDS),
        1e-6);
    assertEquals(1, registry.get(MicrometerRefitListener.INSTALLED_STEP).gauge().value());
    assertEquals(10, registry.get(MicrometerRefitListener.BYTES).counter().count());
  }

  @Test
  void versionWaitsAndLeasesThroughAJvmWideRegistration() {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    try (RefitListeners.Registration ignored =
        RefitListeners.register(new MicrometerRefitListener(registry))) {
      RefitListeners.jvmWide().versionWaited("llama", 4, 2.0);
      RefitListeners.jvmWide().lease("llama", "v4", "r0", LeaseAction.ACQUIRED);
      RefitListeners.jvmWide().lease("llama", "v4", "r0", LeaseAction.RELEASED);
    }
    RefitListeners.jvmWide().lease("llama", "v5", "r0", LeaseAction.ACQUIRED);
    var wait = registry.get(MicrometerRefitListener.VERSION_WAIT).tags("model", "llama").timer();
    assertEquals(1, wait.count());
    assertEquals(2, wait.totalTime(TimeUnit.SECONDS), 1e-9);
    assertEquals(
        1,
        registry.get(MicrometerRefitListener.LEASES).tags("action", "acquired").counter().count(),
        "the call after the registration closed is not counted");
    assertEquals(
        1,
        registry.get(MicrometerRefitListener.LEASES).tags("action", "released").counter().count());
  }

  @Test
  void theTrainerSideIsTimedPerStageAndPerPublish() {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    MicrometerRefitListener l = new MicrometerRefitListener(registry);
    RefitListener.Publish p = new RefitListener.Publish("llama", "1", 3);
    l.publishStageTimed(p, "write_s", 0.25);
    l.publishStageTimed(p, "digest_s", 0.5);
    l.published(p, 1.0, "READY");
    assertEquals(
        500,
        registry
            .get(MicrometerRefitListener.PUBLISH_STAGE)
            .tags("model", "llama", "slot", "1", "stage", "digest")
            .timer()
            .totalTime(TimeUnit.MILLISECONDS),
        1e-6);
    assertEquals(
        1,
        registry
            .get(MicrometerRefitListener.PUBLISH)
            .tags("model", "llama", "slot", "1", "state", "READY")
            .timer()
            .count());
  }
}
