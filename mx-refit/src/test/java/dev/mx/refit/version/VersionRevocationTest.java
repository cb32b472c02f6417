package dev.mx.refit.version;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.SlotStatus;
import dev.mx.api.metadata.VersionLease;
import dev.mx.api.metadata.WeightVersion;
import dev.mx.api.metadata.WeightVersionException;
import dev.mx.api.metadata.WeightVersionState;
import dev.mx.api.metadata.WeightVersionStore;
import dev.mx.api.plan.CaptureResult;
import dev.mx.api.plan.RecordedCopy;
import dev.mx.api.refit.Capture;
import dev.mx.api.refit.ParamSpec;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.metadata.memory.MemoryMetadataStore;
import dev.mx.refit.LiveWeights;
import dev.mx.refit.ReceiverConfig;
import dev.mx.refit.VerifyMode;
import dev.mx.testing.Eventually;
import dev.mx.transport.mem.MemTransportProvider;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The version protocol over a transport that cannot revoke deregistered memory (a real NIXL over
 * shared memory, CMA or TCP), modelled by {@link NonRevokingTransportDouble} over real {@code mem}
 * transports, a real receiver and a real {@code memory:} store: a publisher keeps its registrations
 * until the last lease on its versions ends, and a receiver confirms its lease and the version's
 * slots with the store after its reads, installing nothing when a publisher went away meanwhile.
 * The same scenarios over a revoking transport keep today's behaviour.
 */
class VersionRevocationTest {
  private static final Duration WAIT = Duration.ofSeconds(20);
  private final String model = "model=revocation-" + UUID.randomUUID();
  private final MetadataStore store = new MemoryMetadataStore(model);
  private final WeightVersionStore versions = store.versions();
  private final LiveWeights live =
      new LiveWeights(Map.of("p", new ParamSpec(TwoRankTrainer.GLOBAL, DType.F32)));
  private final List<AutoCloseable> toClose = new ArrayList<>();

  @AfterEach
  void close() throws Exception {
    for (int i = toClose.size() - 1; i >= 0; i--) {
      toClose.get(i).close();
    }
    live.close();
    store.close();
  }

  private TwoRankTrainer trainer(List<NonRevokingTransportDouble> doubles, boolean revokes) {
    TwoRankTrainer t =
        new TwoRankTrainer(
            store,
            model,
            WAIT,
            b -> {},
            mem -> {
              NonRevokingTransportDouble d = new NonRevokingTransportDouble(mem, revokes);
              doubles.add(d);
              return d;
            });
    toClose.add(t);
    return t;
  }

  private NonRevokingTransportDouble receiverTransport(boolean revokes) {
    NonRevokingTransportDouble t =
        new NonRevokingTransportDouble(
            new MemTransportProvider().create(TransportConfig.of("recv-" + model)), revokes);
    toClose.add(t);
    return t;
  }

  private VersionFollower follower(Transport transport) {
    RecordedCopy whole =
        new RecordedCopy(
            "w", List.of(), "p", 0, TwoRankTrainer.GLOBAL, new long[] {4, 1}, DType.F32);
    Capture capture =
        new Capture(
            CaptureResult.of(List.of(whole)),
            Map.of("p", new ParamSpec(TwoRankTrainer.GLOBAL, DType.F32)));
    VersionFollower f =
        VersionFollower.builder(store, model)
            .holder("receiver-0")
            .leaseTtl(Duration.ofSeconds(30))
            .pollInterval(Duration.ofMillis(20))
            .maxAttempts(1)
            .installer(live)
            .transport(transport)
            .receivers(
                TestReceivers.of(
                    transport,
                    capture,
                    ReceiverConfig.defaults()
                        .withVerify(VerifyMode.OFF)
                        .withTimeout(Duration.ofSeconds(10))))
            .build();
    toClose.add(f);
    return f;
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

  @Test
  void closeKeepsTheMemoryRegisteredUntilTheLastLeaseEndsWhenTheTransportCannotRevoke()
      throws Exception {
    List<NonRevokingTransportDouble> doubles = new ArrayList<>();
    TwoRankTrainer trainer = trainer(doubles, false);
    trainer.publishAll(0);
    versions.acquireLease(model, "step-0", "slow-reader", Duration.ofSeconds(60));
    NonRevokingTransportDouble rank0 = doubles.getFirst();
    assertEquals(1, rank0.registrations(), "buffer set 0 of rank 0 is registered");

    CompletableFuture<Void> closing = CompletableFuture.runAsync(trainer.ranks.getFirst()::close);
    // The event: close marked the slot STALE and released the version, so no new lease comes.
    Eventually.await(
        WAIT,
        "rank 0's close to mark its slot STALE and release step-0",
        () -> {
          WeightVersion v = versions.version(model, "step-0").orElseThrow();
          return v.state() == WeightVersionState.RELEASING
              && v.slots().get("0") == SlotStatus.STALE;
        });
    assertEquals(0, rank0.deregistrations(), "nothing deregistered while a lease is live");
    assertFalse(closing.isDone(), "close waits for the reader");
    assertEquals(
        List.of("slow-reader"),
        versions.leases(model, "step-0").stream().map(VersionLease::holder).toList());

    versions.dropLease(model, "step-0", "slow-reader");
    closing.get(WAIT.toSeconds(), TimeUnit.SECONDS);
    assertEquals(1, rank0.deregistrations(), "deregistered once the last lease ended");
  }

  @Test
  void closeDeregistersAtOnceWhenTheTransportRevokes() {
    List<NonRevokingTransportDouble> doubles = new ArrayList<>();
    TwoRankTrainer trainer = trainer(doubles, true);
    trainer.publishAll(0);
    versions.acquireLease(model, "step-0", "slow-reader", Duration.ofSeconds(60));

    trainer.ranks.getFirst().close();
    assertEquals(1, doubles.getFirst().deregistrations(), "a read would fail from now on");
    WeightVersion v = versions.version(model, "step-0").orElseThrow();
    assertEquals(WeightVersionState.READY, v.state(), "not released: revocation is the fence");
    assertEquals(SlotStatus.STALE, v.slots().get("0"));
    assertEquals(1, versions.leases(model, "step-0").size(), "the reader's lease is untouched");
  }

  @Test
  void aReceiverInstallsNothingWhenAPublisherWentStaleDuringItsReadsOverANonRevokingTransport() {
    trainer(new ArrayList<>(), false).publishAll(0);
    NonRevokingTransportDouble transport = receiverTransport(false);
    VersionFollower follower = follower(transport);
    transport.afterNextRead(() -> versions.markSlotStale(model, "step-0", "1", "trainer-1"));

    NoReadableVersionException e =
        assertThrows(NoReadableVersionException.class, () -> follower.followStep(0, WAIT));
    assertTrue(
        e.getMessage().contains("[1]") && e.getMessage().contains("STALE"),
        "names the slot that went away: " + e.getMessage());
    assertArrayEquals(new float[16], installed(), "nothing was installed");
    assertEquals(List.of(), versions.leases(model, "step-0"), "the lease was dropped");
  }

  @Test
  void aReceiverInstallsNothingWhenTheStoreNoLongerHoldsItsLeaseAfterTheReads() {
    trainer(new ArrayList<>(), false).publishAll(0);
    NonRevokingTransportDouble transport = receiverTransport(false);
    VersionFollower follower = follower(transport);
    // As if the lease expired and a publisher's reclaim pruned it: the local clock cannot tell.
    transport.afterNextRead(() -> versions.dropLease(model, "step-0", "receiver-0"));

    NoReadableVersionException e =
        assertThrows(NoReadableVersionException.class, () -> follower.followStep(0, WAIT));
    WeightVersionException cause = assertInstanceOf(WeightVersionException.class, e.getCause());
    assertEquals(WeightVersionException.Reason.LEASE_LOST, cause.reason(), cause.getMessage());
    assertTrue(cause.getMessage().contains("receiver-0"), cause.getMessage());
    assertArrayEquals(new float[16], installed(), "nothing was installed");
  }

  @Test
  void overARevokingTransportAStaleMarkAfterCompleteReadsDoesNotUndoThem() {
    trainer(new ArrayList<>(), true).publishAll(0);
    NonRevokingTransportDouble transport = receiverTransport(true);
    VersionFollower follower = follower(transport);
    // The reads completed: a publisher that deregisters now can no longer change what they got.
    transport.afterNextRead(() -> versions.markSlotStale(model, "step-0", "1", "trainer-1"));

    assertEquals(0, follower.followStep(0, WAIT).step());
    assertArrayEquals(expected(0), installed());
  }

  @Test
  void aReceiverOverANonRevokingTransportInstallsWhenNothingChangedDuringItsReads() {
    TwoRankTrainer trainer = trainer(new ArrayList<>(), false);
    VersionFollower follower = follower(receiverTransport(false));
    for (long step = 0; step < 3; step++) {
      trainer.publishAll(step);
      assertEquals(step, follower.followStep(step, WAIT).step());
      assertArrayEquals(expected(step), installed(), "installed values of step " + step);
    }
  }
}
