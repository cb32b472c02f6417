package dev.mx.refit.version;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.Reclaim;
import dev.mx.api.metadata.VersionLease;
import dev.mx.api.metadata.VersionSlot;
import dev.mx.api.metadata.WeightVersion;
import dev.mx.api.metadata.WeightVersionStore;
import dev.mx.api.plan.CaptureResult;
import dev.mx.api.plan.OpSpec;
import dev.mx.api.plan.RecordedCopy;
import dev.mx.api.refit.Capture;
import dev.mx.api.refit.ParamSpec;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.metadata.ForwardingMetadataStore;
import dev.mx.metadata.memory.MemoryMetadataStore;
import dev.mx.refit.LiveWeights;
import dev.mx.refit.ReceiverConfig;
import dev.mx.refit.VerifyMode;
import dev.mx.transport.mem.MemTransportProvider;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A follower whose plan reads only some publishers fetches, for a later version with the same slots
 * and geometry, only their tables (where the store fetches tables from their publishers, as {@code
 * mx://} does), tells the store which slots it wants, and installs the same bytes; a failed install
 * makes the next fetch whole again.
 */
class SelectiveTableFetchTest {
  private static final Duration WAIT = Duration.ofSeconds(20);
  private static final Shape HALF = Shape.of(2, 4);
  private final String model = "model=selective-" + UUID.randomUUID();
  private final Transport receiverTransport =
      new MemTransportProvider().create(TransportConfig.of("recv-" + model));
  private final LiveWeights live = new LiveWeights(Map.of("p", new ParamSpec(HALF, DType.F32)));
  private final SelectiveStore store = new SelectiveStore(new MemoryMetadataStore(model));

  @AfterEach
  void close() {
    live.close();
    receiverTransport.close();
    store.close();
  }

  @Test
  void aWarmVersionFetchesOnlyTheTablesThePlanReads() {
    try (TwoRankTrainer trainer = new TwoRankTrainer(store, model, WAIT, b -> {});
        VersionFollower follower = follower()) {
      trainer.publishAll(0);
      VersionFollower.Followed first = follower.next(WAIT);
      assertEquals(0, first.step());
      assertEquals(2, first.metrics().get("version_tables_fetched"), "the first version: all");
      assertEquals(List.of("all"), store.fetches, "every slot's table");
      assertArrayEquals(rank0(0), installed());
      assertEquals(Set.of("0"), store.preferred, "the store is told which slots the plan reads");

      // Step 1 is in the trainers' other buffer set: a geometry no plan was made for yet, so
      // after rank 0's table the rest is fetched too, and a second receiver plans.
      trainer.publishAll(1);
      VersionFollower.Followed second = follower.next(WAIT);
      assertEquals(2, second.metrics().get("version_tables_fetched"), second.metrics().toString());
      assertEquals(List.of("all", "[0]", "[1]"), store.fetches);
      assertArrayEquals(rank0(1), installed());

      // Step 2 is in the first set again: only rank 0's table, and the first receiver's plan.
      trainer.publishAll(2);
      VersionFollower.Followed third = follower.next(WAIT);
      assertEquals(2, third.step());
      assertEquals(1, third.metrics().get("version_tables_fetched"), third.metrics().toString());
      assertEquals(List.of("all", "[0]", "[1]", "[0]"), store.fetches);
      assertArrayEquals(rank0(2), installed(), "the bytes of step 2, verified");
      assertEquals(2, follower.receiverCount(), "one receiver per buffer set, each plan kept");
    }
  }

  /** Step {@code step}'s rows 0-1 of the trainers' tensor: all of rank 0's box. */
  private static float[] rank0(long step) {
    float[] v = new float[8];
    for (int i = 0; i < 8; i++) {
      v[i] = TwoRankTrainer.value(step, i);
    }
    return v;
  }

  private float[] installed() {
    return live.parameter("p").toArray(ValueLayout.JAVA_FLOAT);
  }

  /** A receiver of rows 0-1 of "w": only trainer rank 0 holds them. */
  private VersionFollower follower() {
    RecordedCopy rows =
        new RecordedCopy(
            "w", List.of(OpSpec.narrow(0, 0, 2)), "p", 0, HALF, new long[] {4, 1}, DType.F32);
    Capture capture =
        new Capture(CaptureResult.of(List.of(rows)), Map.of("p", new ParamSpec(HALF, DType.F32)));
    return VersionFollower.builder(store, model)
        .holder("receiver-0")
        .leaseTtl(Duration.ofSeconds(5))
        .pollInterval(Duration.ofMillis(20))
        .installer(live)
        .receivers(
            TestReceivers.of(
                receiverTransport,
                capture,
                ReceiverConfig.defaults()
                    .withVerify(VerifyMode.WHOLE_SHARDS)
                    .withTimeout(Duration.ofSeconds(10))))
        .build();
  }

  /**
   * Test double: a memory store whose versions say they fetch tables selectively (as {@code mx://}
   * does) and record each fetch ("all", or the slots asked for) and the slots last preferred.
   */
  private static final class SelectiveStore extends ForwardingMetadataStore {
    final List<String> fetches = Collections.synchronizedList(new ArrayList<>());
    volatile Set<String> preferred;
    private final WeightVersionStore versions;

    SelectiveStore(MetadataStore delegate) {
      super(delegate);
      WeightVersionStore inner = delegate.versions();
      this.versions =
          new WeightVersionStore() {
            @Override
            public WeightVersion createVersion(
                String model, String versionId, long step, List<String> expectedSlots) {
              return inner.createVersion(model, versionId, step, expectedSlots);
            }

            @Override
            public WeightVersion publishSlot(String model, VersionSlot slot) {
              return inner.publishSlot(model, slot);
            }

            @Override
            public void markSlotStale(
                String model, String versionId, String slot, String workerId) {
              inner.markSlotStale(model, versionId, slot, workerId);
            }

            @Override
            public Optional<WeightVersion> version(String model, String versionId) {
              return inner.version(model, versionId);
            }

            @Override
            public List<WeightVersion> versions(String model) {
              return inner.versions(model);
            }

            @Override
            public List<VersionSlot> slots(String model, String versionId) {
              fetches.add("all");
              return inner.slots(model, versionId);
            }

            @Override
            public List<VersionSlot> slots(String model, String versionId, Set<String> only) {
              fetches.add(new java.util.TreeSet<>(only).toString());
              return inner.slots(model, versionId).stream()
                  .filter(s -> only.contains(s.slot()))
                  .toList();
            }

            @Override
            public boolean fetchesTablesSelectively() {
              return true;
            }

            @Override
            public void preferSlots(String model, Set<String> slots) {
              preferred = slots;
            }

            @Override
            public WeightVersion release(String model, String versionId) {
              return inner.release(model, versionId);
            }

            @Override
            public Reclaim reclaim(String model, String versionId, String slot, String workerId) {
              return inner.reclaim(model, versionId, slot, workerId);
            }

            @Override
            public VersionLease acquireLease(
                String model, String versionId, String holder, Duration ttl) {
              return inner.acquireLease(model, versionId, holder, ttl);
            }

            @Override
            public VersionLease renewLease(
                String model, String versionId, String holder, Duration ttl) {
              return inner.renewLease(model, versionId, holder, ttl);
            }

            @Override
            public boolean dropLease(String model, String versionId, String holder) {
              return inner.dropLease(model, versionId, holder);
            }

            @Override
            public List<dev.mx.api.metadata.VersionLease> leases(String model, String versionId) {
              return inner.leases(model, versionId);
            }
          };
    }

    @Override
    public WeightVersionStore versions() {
      return versions;
    }
  }
}
