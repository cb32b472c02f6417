package dev.mx.refit.stage;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.refit.WireGroups;
import dev.mx.api.refit.WirePolicy;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.api.util.Settings;
import dev.mx.refit.wire.FusedWire;
import dev.mx.transport.mem.MemTransportProvider;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.AbstractExecutorService;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The landing batches of {@link PipelinedWire}: work keyed by a read is handed to a worker right
 * after that read's batch landed and before the next batch is read (so it digests bytes still in
 * cache), over the real {@code mem} transport.
 */
class LandingBatchesTest {
  private static final int READS = 4;
  private static final long READ_BYTES = 4096;

  /**
   * Test double: an executor that runs each task on the submitting thread and records, at each
   * submission, how many reads have landed (their destination bytes are no longer zero).
   */
  private static final class LandingCountingExecutor extends AbstractExecutorService {
    final List<Integer> landedAtSubmit = Collections.synchronizedList(new ArrayList<>());
    final MemorySegment dst;

    LandingCountingExecutor(MemorySegment dst) {
      this.dst = dst;
    }

    int landed() {
      int n = 0;
      for (int i = 0; i < READS; i++) {
        n += dst.get(ValueLayout.JAVA_BYTE, i * READ_BYTES) != 0 ? 1 : 0;
      }
      return n;
    }

    @Override
    public void execute(Runnable command) {
      landedAtSubmit.add(landed());
      command.run();
    }

    @Override
    public void shutdown() {}

    @Override
    public List<Runnable> shutdownNow() {
      return List.of();
    }

    @Override
    public boolean isShutdown() {
      return false;
    }

    @Override
    public boolean isTerminated() {
      return false;
    }

    @Override
    public boolean awaitTermination(long timeout, TimeUnit unit) {
      return true;
    }
  }

  /**
   * Test double: work that does not ride on the copy (as over a DMA transport): the transport's
   * call of its fold is a plain copy, and its task goes to a worker once the read landed.
   */
  private static final class DigestAfterLanding implements LandedWork {
    final Runnable task;

    DigestAfterLanding(Runnable task) {
      this.task = task;
    }

    @Override
    public void copy(MemorySegment src, MemorySegment dst) {
      MemorySegment.copy(src, 0, dst, 0, src.byteSize());
    }

    @Override
    public boolean folded() {
      return false;
    }

    @Override
    public Left afterLanding() {
      return new Left(List.of(), List.of(task));
    }
  }

  /**
   * Test double: work that rides on the copy; records the thread and the bytes its fold was handed
   * and what had landed when its comparison ran.
   */
  private static final class FoldedWork implements LandedWork {
    final List<String> log;
    final int read;
    volatile boolean folded;

    FoldedWork(List<String> log, int read) {
      this.log = log;
      this.read = read;
    }

    @Override
    public void copy(MemorySegment src, MemorySegment dst) {
      MemorySegment.copy(src, 0, dst, 0, src.byteSize());
      log.add(
          "fold " + read + ": " + src.byteSize() + " bytes on " + Thread.currentThread().getName());
      folded = true;
    }

    @Override
    public boolean folded() {
      return folded;
    }

    @Override
    public Left afterLanding() {
      return new Left(
          List.of(() -> log.add("compare " + read + " on " + Thread.currentThread().getName())),
          List.of());
    }
  }

  /** One trainer peer over the real {@code mem} transport and {@value #READS} reads of it. */
  private static final class OnePeer implements AutoCloseable {
    final Arena arena = Arena.ofShared();
    final Transport trainer = new MemTransportProvider().create(TransportConfig.of("trainer-0"));
    final Transport receiver = new MemTransportProvider().create(TransportConfig.of("inference-0"));
    final MemorySegment src = arena.allocate(READS * READ_BYTES, 64);
    final MemorySegment dst = arena.allocate(READS * READ_BYTES, 64);
    final List<ReadDescriptor> reads = new ArrayList<>();
    final Descriptors descriptors;

    OnePeer() {
      src.fill((byte) 7);
      trainer.register(src);
      receiver.register(dst);
      receiver.connect("trainer-0", trainer.localMetadata());
      for (int i = 0; i < READS; i++) {
        reads.add(
            new ReadDescriptor(
                "trainer-0",
                src.address() + i * READ_BYTES,
                dst.address() + i * READ_BYTES,
                READ_BYTES));
      }
      descriptors =
          new Descriptors(
              new WireGroups(reads, List.of(), List.of()), reads, READS, READS * READ_BYTES);
    }

    @Override
    public void close() {
      receiver.close();
      trainer.close();
      arena.close();
    }
  }

  @Test
  void workKeyedByAReadStartsRightAfterItsBatchLandedBeforeTheNextBatchIsRead() {
    try (OnePeer peer = new OnePeer()) {
      Transport receiver = peer.receiver;
      MemorySegment src = peer.src;
      MemorySegment dst = peer.dst;
      List<ReadDescriptor> reads = peer.reads;
      Descriptors d = peer.descriptors;
      List<Integer> ran = Collections.synchronizedList(new ArrayList<>());
      Map<ReadDescriptor, LandedWork> onLanded = new HashMap<>();
      for (int i = 0; i < READS; i++) {
        int read = i;
        onLanded.put(reads.get(i), new DigestAfterLanding(() -> ran.add(read)));
      }
      // Not issued by this call: runs after the wire.
      onLanded.put(
          new ReadDescriptor("trainer-0", src.address(), dst.address(), 1),
          new DigestAfterLanding(() -> ran.add(-1)));
      LandingCountingExecutor workers = new LandingCountingExecutor(dst);
      Map<String, Double> stages =
          PipelinedWire.run(
              new FusedWire(),
              receiver,
              d,
              Map.of("trainer-0", List.of(() -> ran.add(100))),
              onLanded,
              workers,
              Duration.ofSeconds(30),
              true,
              2 * READ_BYTES,
              false);
      // Two batches of two reads: each read's work was handed over when exactly its batch had
      // landed; the peer's work after its last batch; the orphan last.
      assertEquals(List.of(2, 2, 4, 4, 4, 4), workers.landedAtSubmit);
      assertEquals(List.of(0, 1, 2, 3, 100, -1), ran);
      assertEquals(2.0, stages.get("landing_batches"));
      assertTrue(stages.containsKey("pipeline_drain_s"), stages.toString());
    }
  }

  @Test
  void withTheDigestOnTheWireEachBatchsWorkRunsOnTheWireThreadBeforeTheNextBatchIsRead() {
    try (OnePeer peer = new OnePeer()) {
      List<String> ran = Collections.synchronizedList(new ArrayList<>());
      LandingCountingExecutor workers = new LandingCountingExecutor(peer.dst);
      Thread wire = Thread.currentThread();
      Map<ReadDescriptor, LandedWork> onLanded = new HashMap<>();
      for (int i = 0; i < READS; i++) {
        int read = i;
        onLanded.put(
            peer.reads.get(i),
            new DigestAfterLanding(
                () ->
                    ran.add(
                        read
                            + " after "
                            + workers.landed()
                            + (Thread.currentThread() == wire ? " on the wire" : " elsewhere"))));
      }
      PipelinedWire.run(
          new FusedWire(),
          peer.receiver,
          peer.descriptors,
          Map.of("trainer-0", List.of(() -> ran.add("peer"))),
          onLanded,
          workers,
          Duration.ofSeconds(30),
          true,
          2 * READ_BYTES,
          true);
      assertEquals(
          List.of(
              "0 after 2 on the wire",
              "1 after 2 on the wire",
              "2 after 4 on the wire",
              "3 after 4 on the wire",
              "peer"),
          ran);
      assertEquals(List.of(4), workers.landedAtSubmit, "only the peer's work went to a worker");
    }
  }

  /**
   * An integrator's policy: a decorator of the fused one that counts its calls and records, at each
   * call, how many reads had landed and how much of the work had been handed to the workers.
   */
  private static final class CountingWire implements WirePolicy {
    final WirePolicy inner = new FusedWire();
    final List<String> calls = Collections.synchronizedList(new ArrayList<>());
    final LandingCountingExecutor workers;

    CountingWire(LandingCountingExecutor workers) {
      this.workers = workers;
    }

    @Override
    public String name() {
      return "counting";
    }

    @Override
    public Map<String, Double> transfer(Transport transport, WireGroups groups, Duration timeout) {
      calls.add(
          groups.exact().size()
              + " read(s) after "
              + workers.landed()
              + " landed, "
              + workers.landedAtSubmit.size()
              + " task(s) handed over");
      return inner.transfer(transport, groups, timeout);
    }
  }

  @Test
  void aCustomPolicyIssuesEveryLandingBatchAndKeepsThePipelining() {
    try (OnePeer peer = new OnePeer()) {
      Transport receiver = peer.receiver;
      MemorySegment src = peer.src;
      MemorySegment dst = peer.dst;
      List<ReadDescriptor> reads = peer.reads;
      Descriptors d = peer.descriptors;
      List<Integer> ran = Collections.synchronizedList(new ArrayList<>());
      Map<ReadDescriptor, LandedWork> onLanded = new HashMap<>();
      for (int i = 0; i < READS; i++) {
        int read = i;
        onLanded.put(reads.get(i), new DigestAfterLanding(() -> ran.add(read)));
      }
      LandingCountingExecutor workers = new LandingCountingExecutor(dst);
      CountingWire policy = new CountingWire(workers);
      Map<String, Double> stages =
          PipelinedWire.run(
              policy,
              receiver,
              d,
              Map.of(),
              onLanded,
              workers,
              Duration.ofSeconds(30),
              true,
              2 * READ_BYTES,
              false);
      // The policy issued both batches; the work of the first batch was handed over (with only
      // its reads landed) before the policy was asked for the second: the overlap happened.
      assertEquals(
          List.of(
              "2 read(s) after 0 landed, 0 task(s) handed over",
              "2 read(s) after 2 landed, 2 task(s) handed over"),
          policy.calls);
      assertEquals(List.of(2, 2, 4, 4), workers.landedAtSubmit);
      assertEquals(List.of(0, 1, 2, 3), ran);
      assertEquals(2.0, stages.get("landing_batches"));
      assertTrue(stages.containsKey("wire_fused_s"), "the policy's stages are reported");
    }
  }

  @Test
  void workThatRidesOnTheCopyComparesOnTheWireThreadRightAfterItsBatchAndNeverOnAWorker() {
    try (OnePeer peer = new OnePeer()) {
      List<String> log = Collections.synchronizedList(new ArrayList<>());
      Map<ReadDescriptor, LandedWork> onLanded = new HashMap<>();
      for (int i = 0; i < READS; i++) {
        onLanded.put(peer.reads.get(i), new FoldedWork(log, i));
      }
      LandingCountingExecutor workers = new LandingCountingExecutor(peer.dst);
      String wire = Thread.currentThread().getName();
      PipelinedWire.run(
          new FusedWire(),
          peer.receiver,
          peer.descriptors,
          Map.of(),
          onLanded,
          workers,
          Duration.ofSeconds(30),
          true,
          2 * READ_BYTES,
          false);
      // The mem transport copied each read through its fold, on the calling thread; each batch's
      // comparisons followed that batch, before the next one was read.
      List<String> expected = new ArrayList<>();
      for (int batch = 0; batch < 2; batch++) {
        for (int r = 2 * batch; r < 2 * batch + 2; r++) {
          expected.add("fold " + r + ": " + READ_BYTES + " bytes on " + wire);
        }
        for (int r = 2 * batch; r < 2 * batch + 2; r++) {
          expected.add("compare " + r + " on " + wire);
        }
      }
      assertEquals(expected, log);
      assertEquals(List.of(), workers.landedAtSubmit, "nothing was handed to a worker");
      assertEquals(-1L, peer.src.mismatch(peer.dst), "every byte landed");
    }
  }

  @Test
  void batchesHoldAtLeastTheLandingBytesAndZeroMeansOneBatchPerPeer() {
    List<ReadDescriptor> reads = new ArrayList<>();
    for (long n : new long[] {5, 3, 9, 1, 1}) {
      reads.add(new ReadDescriptor("p", 0, 0, n));
    }
    List<List<ReadDescriptor>> b = PipelinedWire.batches(reads, 8);
    assertEquals(List.of(2, 1, 2), b.stream().map(List::size).toList());
    assertEquals(List.of(5), PipelinedWire.batches(reads, 0).stream().map(List::size).toList());
  }

  /** The landing batch a receiver concludes from these settings. */
  private static long landingBytes(Settings s) {
    return dev.mx.refit.ReceiverContext.conclude(dev.mx.refit.ReceiverConfig.defaults(), s, false)
        .landingBytes();
  }

  @Test
  void theLandingBatchSettingIsCheckedAndNamed() {
    assertEquals(
        PipelinedWire.DEFAULT_LANDING_BYTES, landingBytes(Settings.of(Map.of(), Map.of())));
    assertEquals(
        4L << 20, landingBytes(Settings.of(Map.of(), Map.of(PipelinedWire.LANDING_ENV, "4m"))));
    assertEquals(
        0L, landingBytes(Settings.of(Map.of(PipelinedWire.LANDING_PROPERTY, "0"), Map.of())));
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                landingBytes(
                    Settings.of(Map.of(PipelinedWire.LANDING_PROPERTY, "lots"), Map.of())));
    assertTrue(e.getMessage().startsWith("mx.receiver.landing-bytes='lots'"), e.getMessage());
  }
}
