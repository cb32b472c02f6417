package dev.mx.it.layout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.WeightVersion;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.api.transport.TransportProvider;
import dev.mx.api.util.Closeables;
import dev.mx.layout.model.ModelConfigs;
import dev.mx.layout.vllm.InferenceTopology;
import dev.mx.layout.vllm.VllmReference;
import dev.mx.metadata.MetadataStores;
import dev.mx.refit.LiveWeights;
import dev.mx.refit.version.NoReadableVersionException;
import dev.mx.refit.version.VersionFollower;
import dev.mx.testing.ForwardingTransport;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A trainer JVM ({@code mx publish --steps}: two buffer sets) SIGKILLed or SIGSTOPped part-way
 * through an in-place install: after the receiver's first read of the new step that landed in its
 * live weights. Killed, the step fails naming the dead trainer: over shm the receiver had mapped
 * the trainer's files, which outlive it, so the previous step, still in the set the receiver's
 * lease kept, is read back from there and verified, and every live element equals the generator's
 * previous step; over ucx the trainer's memory died with it, and the live weights say they are
 * torn. Stopped: over shm the one-sided reads need no trainer and the step installs, verified; over
 * ucx nothing more is served, the step fails and the live weights say they are torn.
 */
class InPlacePublisherFaultTest {
  private static final String IDENTITY = "in-place-fault/" + VersionJvms.MODEL;
  @TempDir Path dir;
  private final List<AutoCloseable> toClose = new ArrayList<>();
  private final List<Process> trainers = new ArrayList<>();

  @AfterEach
  void tearDown() throws Exception {
    Closeables.closeAll(toClose.reversed());
    for (Process p : trainers) {
      signal("CONT", p);
      p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
    }
  }

  @Test
  void killedOverShmEveryLiveByteIsThePreviousStepsRestoredFromTheDeadTrainersMappedMemory()
      throws Exception {
    LiveWeights live = faultPartWay(VersionJvms.requireTransport("shm"), Fault.KILL);
    assertFalse(live.isTorn(), "restored, not torn");
    assertEquals(0, live.lastStep());
    assertEquals(List.of(), mismatches(live, 0), "every live element is step 0's");
  }

  @Test
  void killedOverUcxTheLiveWeightsSayTheyAreTorn() throws Exception {
    LiveWeights live = faultPartWay(VersionJvms.requireUcx(), Fault.KILL);
    assertTrue(live.isTorn(), "the dead trainer's step-0 bytes died with it");
    assertEquals(0, live.lastStep(), "the last step installed whole");
  }

  @Test
  void stoppedOverShmTheOneSidedReadsCompleteAndEveryLiveByteIsTheNewStepsVerified()
      throws Exception {
    LiveWeights live = faultPartWay(VersionJvms.requireTransport("shm"), Fault.STOP);
    assertFalse(live.isTorn());
    assertEquals(1, live.lastStep());
    assertEquals(List.of(), mismatches(live, 1), "every live element is step 1's");
  }

  @Test
  void stoppedOverUcxTheStepFailsNamingItAndTheLiveWeightsSayTheyAreTorn() throws Exception {
    LiveWeights live = faultPartWay(VersionJvms.requireUcx(), Fault.STOP);
    assertTrue(live.isTorn(), "a stopped trainer serves nothing over ucx, its step 0 neither");
    assertEquals(0, live.lastStep(), "the last step installed whole");
  }

  /** What happens to trainer 1 part-way through the install of step 1. */
  private enum Fault {
    /** SIGKILL, waiting until it is gone. */
    KILL,
    /** SIGSTOP (resumed at tear-down). */
    STOP
  }

  /**
   * Two trainer JVMs (tp=2) publish steps 0 and 1; receiver rank 0 of tp=1 (reading both) installs
   * step 0 in place, then step 1 with {@code fault} done to trainer 1 after the first read that
   * landed in the live weights. Returns the live weights after step 1 installed (only a stopped
   * trainer over shm may let it) or failed, naming trainer 1 and saying the live weights were being
   * written.
   */
  private LiveWeights faultPartWay(TransportProvider provider, Fault fault) throws Exception {
    String store = "file:" + dir.resolve("store");
    for (int r = 0; r < 2; r++) {
      trainers.add(
          VersionJvms.publish(
              dir, store, IDENTITY, provider.name(), r, 2, "--steps", "2", "--interval", "1"));
    }
    MetadataStore metadata = closeLater(MetadataStores.open(store));
    LiveWeights live = closeLater(new LiveWeights(VersionJvms.inferenceTp1().params()));
    FaultAfterFirstLiveRead t =
        new FaultAfterFirstLiveRead(
            closeLater(
                provider.create(
                    new TransportConfig("receiver-0", Duration.ofSeconds(30), Map.of()))),
            trainers.get(1),
            fault,
            live);
    live.registerWith(t);
    VersionFollower f =
        closeLater(
            // The read timeout: how long a stopped trainer is waited for over ucx.
            VersionJvms.inPlaceFollower(metadata, IDENTITY, t, live, Duration.ofSeconds(10))
                .restorePrevious(true)
                .maxAttempts(1)
                .build());
    f.followStep(0, Duration.ofSeconds(120));
    assertEquals(List.of(), mismatches(live, 0), "step 0 installed exactly");
    await(metadata, "step-1");

    t.armed.set(true);
    NoReadableVersionException failure;
    try {
      f.followStep(1, null);
      assertFalse(t.armed.get(), "trainer 1 was stopped part-way through the install");
      assertTrue(fault == Fault.STOP && provider.name().equals("shm"), "step 1 should have failed");
      return live;
    } catch (NoReadableVersionException e) {
      failure = e;
    }
    assertFalse(t.armed.get(), "trainer 1 was faulted part-way through the install");
    assertTrue(
        failure.getMessage().contains("trainer-1"),
        "names the faulted trainer: " + failure.getMessage());
    assertTrue(
        failure.getMessage().contains("began writing the live weights"),
        "the step had begun overwriting live memory: " + failure.getMessage());
    return live;
  }

  private static List<String> mismatches(LiveWeights live, long step) {
    VllmReference reference =
        new VllmReference(ModelConfigs.load(VersionJvms.MODEL), InferenceTopology.tp(1), 0);
    List<String> out = new ArrayList<>();
    for (String name : live.layout().keySet()) {
      out.addAll(reference.mismatches(name, live.parameter(name), step, DType.F32, DType.F32, 3));
    }
    return out;
  }

  /** Waits (an event: the store lists it READY) until the trainers published {@code id}. */
  private static void await(MetadataStore store, String id) throws InterruptedException {
    while (!store.versions().version(IDENTITY, id).map(WeightVersion::isReadable).orElse(false)) {
      Thread.sleep(20);
    }
  }

  private static void signal(String name, Process p) throws Exception {
    if (p.isAlive()) {
      new ProcessBuilder("kill", "-" + name, Long.toString(p.pid())).start().waitFor();
    }
  }

  private <T extends AutoCloseable> T closeLater(T c) {
    toClose.add(c);
    return c;
  }

  /**
   * Test double around a real transport: reads one at a time, and once armed does its fault to the
   * victim right after the first read that landed bytes in the live weights (not the receiver's
   * probe), before any other read.
   */
  private static final class FaultAfterFirstLiveRead extends ForwardingTransport {
    final AtomicBoolean armed = new AtomicBoolean();
    private final Process victim;
    private final Fault fault;
    private final LiveWeights live;

    FaultAfterFirstLiveRead(Transport delegate, Process victim, Fault fault, LiveWeights live) {
      super(delegate);
      this.victim = victim;
      this.fault = fault;
      this.live = live;
    }

    @Override
    public synchronized void read(List<ReadDescriptor> batch, Duration timeout) {
      delegate.read(batch, timeout);
      if (VersionJvms.landsIn(live, batch) && armed.compareAndSet(true, false)) {
        try {
          if (fault == Fault.KILL) {
            victim.destroyForcibly();
            victim.waitFor();
          } else {
            signal("STOP", victim);
          }
        } catch (Exception e) {
          throw new AssertionError("faulting trainer 1", e);
        }
      }
    }
  }
}
