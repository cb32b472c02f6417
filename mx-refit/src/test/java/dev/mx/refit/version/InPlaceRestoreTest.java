package dev.mx.refit.version;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.plan.CaptureResult;
import dev.mx.api.plan.RecordedCopy;
import dev.mx.api.refit.Capture;
import dev.mx.api.refit.ParamSpec;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.api.util.Settings;
import dev.mx.metadata.memory.MemoryMetadataStore;
import dev.mx.refit.LiveWeights;
import dev.mx.refit.Receiver;
import dev.mx.refit.ReceiverConfig;
import dev.mx.transport.mem.MemTransportProvider;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * In-place installs under the version protocol, over real mem transports, a real receiver and a
 * real store: a step that tears the live weights is restored from the version installed before
 * (still leased), a job committing steps across ranks can roll a rank back, and a trainer with a
 * single buffer set (zero-copy) still publishes every step in order.
 */
class InPlaceRestoreTest {
  private static final Duration WAIT = Duration.ofSeconds(20);
  private final String model = "model=inplace-" + UUID.randomUUID();
  private final Transport receiverTransport =
      new MemTransportProvider().create(TransportConfig.of("recv-" + model));
  private final LiveWeights live =
      new LiveWeights(Map.of("p", new ParamSpec(TwoRankTrainer.GLOBAL, DType.F32)));
  private final MetadataStore store = new MemoryMetadataStore(model);

  InPlaceRestoreTest() {
    live.registerWith(receiverTransport);
  }

  @AfterEach
  void close() {
    live.close();
    receiverTransport.close();
    store.close();
  }

  private VersionFollower follower(Consumer<VersionFollower.Builder> more) {
    RecordedCopy whole =
        new RecordedCopy(
            "w", List.of(), "p", 0, TwoRankTrainer.GLOBAL, new long[] {4, 1}, DType.F32);
    Capture capture =
        new Capture(
            CaptureResult.of(List.of(whole)),
            Map.of("p", new ParamSpec(TwoRankTrainer.GLOBAL, DType.F32)));
    VersionFollower.Builder b =
        VersionFollower.builder(store, model)
            .holder("receiver-0")
            .leaseTtl(Duration.ofSeconds(5))
            .pollInterval(Duration.ofMillis(20))
            .maxAttempts(1)
            .installer(live)
            .receivers(
                (discovery, installer) ->
                    Receiver.builder()
                        .config(ReceiverConfig.defaults().withTimeout(Duration.ofSeconds(10)))
                        .settings(Settings.of(Map.of(), Map.of()))
                        .transport(receiverTransport)
                        .discovery(discovery)
                        .geometry(m -> capture)
                        .inPlace(live)
                        .installer(installer)
                        .rediscoverEachStep(true)
                        .build());
    more.accept(b);
    return b.build();
  }

  private float[] installed() {
    return live.parameter("p").toArray(ValueLayout.JAVA_FLOAT);
  }

  private static float[] expected(long step) {
    float[] v = new float[16];
    for (int i = 0; i < 16; i++) {
      v[i] = TwoRankTrainer.value(step, i);
    }
    return v;
  }

  /** Flips a value of rank 1's newest buffer set after its digest was published. */
  private static void corruptRankOne(TwoRankTrainer trainer, long step) {
    MemorySegment seg = trainer.sets[1][(int) (step % 2)];
    seg.setAtIndex(ValueLayout.JAVA_FLOAT, 3, -1f);
  }

  @Test
  void aTornStepIsRestoredFromTheStillLeasedPreviousVersion() {
    try (TwoRankTrainer trainer = new TwoRankTrainer(store, model, WAIT, b -> {});
        VersionFollower follower = follower(b -> b.restorePrevious(true))) {
      trainer.publishAll(0);
      follower.followStep(0, WAIT);
      assertArrayEquals(expected(0), installed());
      assertEquals(
          List.of("receiver-0"),
          store.versions().leases(model, "step-0").stream().map(l -> l.holder()).toList(),
          "the installed version stays leased");
      trainer.publishAll(1);
      corruptRankOne(trainer, 1);
      RuntimeException e = assertThrows(RuntimeException.class, () -> follower.followStep(1, WAIT));
      String all = e.getMessage() + " / " + causes(e);
      assertTrue(all.contains("digest mismatch"), all);
      assertTrue(all.contains("restored to step 0"), all);
      assertArrayEquals(expected(0), installed(), "the live weights hold step 0 again");
      assertFalse(live.isTorn());
      assertEquals(0, live.lastStep());
      assertEquals(0L, follower.lastStep());
    }
  }

  @Test
  void withoutAHeldPreviousVersionATornStepStaysTornUntilTheNextStepRepairsIt() {
    try (TwoRankTrainer trainer = new TwoRankTrainer(store, model, WAIT, b -> {});
        VersionFollower follower = follower(b -> {})) {
      trainer.publishAll(0);
      follower.followStep(0, WAIT);
      trainer.publishAll(1);
      corruptRankOne(trainer, 1);
      RuntimeException e = assertThrows(RuntimeException.class, () -> follower.followStep(1, WAIT));
      assertTrue(causes(e).contains("TornInstallException"), causes(e));
      assertTrue(live.isTorn(), "step 1 began writing the live weights");
      assertEquals(1, live.tornStep());
      trainer.publishAll(2);
      follower.followStep(2, WAIT);
      assertFalse(live.isTorn());
      assertArrayEquals(expected(2), installed());
    }
  }

  @Test
  void aRankThatInstalledAStepAnotherRankFailedRollsBackToThePreviousOne() {
    try (TwoRankTrainer trainer = new TwoRankTrainer(store, model, WAIT, b -> {});
        VersionFollower follower = follower(b -> b.restorePrevious(true).holdUntilCommit(true))) {
      trainer.publishAll(0);
      follower.followStep(0, WAIT);
      follower.commit();
      trainer.publishAll(1);
      follower.followStep(1, WAIT);
      assertArrayEquals(expected(1), installed());
      assertEquals(1, store.versions().leases(model, "step-0").size(), "held until commit");
      assertEquals(0L, follower.rollback());
      assertArrayEquals(expected(0), installed(), "rolled back to step 0, verified");
      assertEquals(List.of(), store.versions().leases(model, "step-1"), "step 1 is let go");
      assertEquals(0L, follower.lastStep());
    }
  }

  @Test
  void aTrainerWithOneBufferSetPublishesEveryStepOnceItsReadersAreDone() {
    try (OneSetTrainer trainer = new OneSetTrainer();
        VersionFollower follower = follower(b -> {})) {
      for (long step = 0; step < 4; step++) {
        trainer.publish(step);
        follower.followStep(step, WAIT);
        assertArrayEquals(expected(step), installed(), "step " + step);
        assertEquals(List.of("step-" + step), trainer.publisher.heldVersions());
      }
    }
  }

  /** One rank holding the whole tensor in a single buffer set. */
  private final class OneSetTrainer implements AutoCloseable {
    final Transport transport =
        new MemTransportProvider().create(TransportConfig.of(model + "-trainer-solo"));
    final java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofShared();
    final MemorySegment memory = arena.allocate(16 * 4, 64);
    final VersionedPublisher publisher;

    OneSetTrainer() {
      publisher =
          VersionedPublisher.builder(transport, store)
              .model(model)
              .slot("0")
              .expectedSlots(List.of("0"))
              .workerId("trainer-solo")
              .rank(0)
              .leaseWait(WAIT)
              .pollInterval(Duration.ofMillis(20))
              .shutdownHook(false)
              .configure(p -> p.heartbeatInterval(Duration.ofSeconds(30)))
              .bufferSet(
                  p ->
                      p.tensor(
                          "w",
                          DType.F32,
                          TwoRankTrainer.GLOBAL,
                          new long[] {0, 0},
                          TwoRankTrainer.GLOBAL,
                          memory))
              .start();
    }

    void publish(long step) {
      publisher.publish(
          step,
          set -> {
            for (int i = 0; i < 16; i++) {
              memory.setAtIndex(ValueLayout.JAVA_FLOAT, i, TwoRankTrainer.value(step, i));
            }
          });
    }

    @Override
    public void close() {
      publisher.close();
      transport.close();
      arena.close();
    }
  }

  private static String causes(Throwable e) {
    StringBuilder sb = new StringBuilder();
    for (Throwable t = e; t != null; t = t.getCause()) {
      sb.append(t.getClass().getSimpleName()).append(": ").append(t.getMessage()).append(" <- ");
    }
    return sb.toString();
  }
}
