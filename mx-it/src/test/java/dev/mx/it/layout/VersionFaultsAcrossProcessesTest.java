package dev.mx.it.layout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.Reclaim;
import dev.mx.api.metadata.VersionLease;
import dev.mx.api.metadata.WeightVersion;
import dev.mx.api.metadata.WeightVersionState;
import dev.mx.api.metadata.WeightVersionStore;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.api.transport.TransportProvider;
import dev.mx.api.util.Closeables;
import dev.mx.cli.demo.VersionedTrainer;
import dev.mx.layout.model.ModelArchitecture;
import dev.mx.layout.model.ModelConfigs;
import dev.mx.layout.trainer.TrainerBuffers;
import dev.mx.layout.trainer.TrainerRankLayout;
import dev.mx.layout.trainer.TrainerTopology;
import dev.mx.layout.vllm.InferenceTopology;
import dev.mx.layout.vllm.VllmReference;
import dev.mx.metadata.MetadataStores;
import dev.mx.refit.version.NoReadableVersionException;
import dev.mx.refit.version.VersionFollower;
import dev.mx.refit.version.VersionedPublisher;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * SIGKILL faults of the version protocol across real JVMs, each leaving every receiver on its
 * previous complete version: a trainer JVM ({@code mx publish --steps}) killed before its slot of a
 * version lands (then restarted), a receiver JVM killed while it holds a lease, and a trainer JVM
 * killed while a receiver reads its version (over UCX and over shm). Receivers verify every element
 * they install against the generator ({@link VllmReference}). Over a {@code file:} store with lease
 * TTLs of 1.5 s, so each case takes seconds. Skips, printing the cause, without the transport
 * (unless {@code -Dmx.test.requireNative=true}).
 */
class VersionFaultsAcrossProcessesTest {
  private static final String IDENTITY = "version-faults/" + VersionJvms.MODEL;
  private static final Duration TTL = Duration.ofMillis(1500);
  @TempDir Path dir;
  private final List<AutoCloseable> toClose = new ArrayList<>();
  private final List<Process> processes = new ArrayList<>();

  @AfterEach
  void tearDown() throws Exception {
    Closeables.closeAll(toClose.reversed());
    for (Process p : processes) {
      p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
    }
  }

  private String store() {
    return "file:" + dir.resolve("store");
  }

  private <T extends AutoCloseable> T closeLater(T c) {
    toClose.add(c);
    return c;
  }

  private LayoutRefitEndToEndTest.CheckingInstaller checking(int rank, int tp) {
    return new LayoutRefitEndToEndTest.CheckingInstaller(
        new VllmReference(ModelConfigs.load(VersionJvms.MODEL), InferenceTopology.tp(tp), rank),
        DType.F32,
        DType.F32);
  }

  private VersionFollower follower(
      TransportProvider transport,
      MetadataStore store,
      String name,
      int rank,
      int tp,
      LayoutRefitEndToEndTest.CheckingInstaller installer,
      Runnable beforeRead) {
    Transport t =
        closeLater(transport.create(new TransportConfig(name, Duration.ofSeconds(30), Map.of())));
    return closeLater(
        VersionJvms.follower(
            store,
            IDENTITY,
            t,
            name,
            rank,
            tp,
            installer,
            TTL,
            d ->
                timeout -> {
                  // Called by the receiver under the lease, with the version's tables fetched,
                  // before any byte is read.
                  beforeRead.run();
                  return d.discover(timeout);
                }));
  }

  /** The step was installed and every installed element equals the generator's value for it. */
  private static void assertInstalled(
      long step, VersionFollower f, LayoutRefitEndToEndTest.CheckingInstaller i) {
    assertEquals(step, f.lastStep(), "follower's installed step");
    assertEquals(step, i.lastStep, "installer's last step");
    assertTrue(
        !i.installed.isEmpty() && i.mismatches.isEmpty(),
        "step " + step + " installed exactly: " + i.mismatches);
  }

  private static void await(String what, Duration timeout, BooleanSupplier condition)
      throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!condition.getAsBoolean()) {
      assertTrue(System.nanoTime() < deadline, "timed out waiting until " + what);
      Thread.sleep(20);
    }
  }

  private static Optional<WeightVersion> version(MetadataStore store, String id) {
    return store.versions().version(IDENTITY, id);
  }

  private static void sigkill(Process p) throws Exception {
    assertEquals(0, new ProcessBuilder("kill", "-KILL", Long.toString(p.pid())).start().waitFor());
    assertTrue(p.waitFor(30, TimeUnit.SECONDS), "killed JVM exits");
    assertEquals(137, p.exitValue(), "exit status of a SIGKILLed JVM");
  }

  /**
   * Trainer rank 1 is SIGKILLed after its slot of step 0 landed and before its slot of step 1 does
   * (it waits 60 s between versions; rank 0 publishes step 1 after 1 s): step 1 does not become
   * READY, and the receivers stay on step 0 and then fail naming the missing slot. Rank 1 restarted
   * then completes step 1, and the receivers install it (connecting again to the restarted
   * process).
   */
  @Test
  void aPublisherKilledBeforeItsSlotLandsLeavesTheVersionStagingUntilARestartedOneCompletesIt()
      throws Exception {
    TransportProvider ucx = VersionJvms.requireUcx();
    processes.add(
        VersionJvms.publish(dir, store(), IDENTITY, 0, 2, "--steps", "2", "--interval", "1"));
    processes.add(
        VersionJvms.publish(dir, store(), IDENTITY, 1, 2, "--steps", "2", "--interval", "60"));
    MetadataStore store = closeLater(MetadataStores.open(store()));
    List<VersionFollower> followers = new ArrayList<>();
    List<LayoutRefitEndToEndTest.CheckingInstaller> installers = new ArrayList<>();
    for (int r = 0; r < 2; r++) {
      installers.add(checking(r, 2));
      followers.add(follower(ucx, store, "receiver-" + r, r, 2, installers.get(r), () -> {}));
      // The first version waits for the trainer JVMs to start (slow on a loaded machine).
      followers.get(r).next(Duration.ofSeconds(120));
      assertInstalled(0, followers.get(r), installers.get(r));
    }
    sigkill(processes.get(1));
    await(
        "rank 0 landed its slot of step 1",
        Duration.ofSeconds(60),
        () -> version(store, "step-1").map(v -> v.slots().containsKey("0")).orElse(false));
    for (int r = 0; r < 2; r++) {
      VersionFollower f = followers.get(r);
      NoReadableVersionException e =
          assertThrows(NoReadableVersionException.class, () -> f.next(Duration.ofSeconds(3)));
      assertTrue(
          e.getMessage().contains("version 'step-1'")
              && e.getMessage().contains("missing slots=[1]"),
          "names the version and its missing slot: " + e.getMessage());
      assertInstalled(0, f, installers.get(r));
    }
    WeightVersion v = version(store, "step-1").orElseThrow();
    assertEquals(WeightVersionState.STAGING, v.state(), v.describe());
    assertEquals(List.of("1"), v.missingSlots(), v.describe());
    assertFalse(v.isReadable(), v.describe());

    // Rank 1 restarted (same session name, another process) lands its slot of step 1: the receivers
    // proceed.
    processes.add(VersionJvms.publish(dir, store(), IDENTITY, 1, 2, "--step", "1", "--steps", "1"));
    for (int r = 0; r < 2; r++) {
      assertEquals(1, followers.get(r).next(Duration.ofSeconds(120)).step(), "receiver " + r);
      assertInstalled(1, followers.get(r), installers.get(r));
    }
  }

  /**
   * A receiver JVM is SIGKILLed while it holds a lease on step 0 (inside its install). The trainer
   * (this JVM, one rank over UCX) cannot get that buffer set back while the lease lives (a reclaim
   * is refused naming the holder) nor before its TTL ran out, and does right after: its publish of
   * step 2 writes into the set only once the dead receiver's lease expired. A live receiver then
   * follows steps 1 and 2 with exact values.
   */
  @Test
  void aReceiverKilledHoldingALeaseHoldsTheTrainerBackOnlyUntilTheTtl() throws Exception {
    TransportProvider ucx = VersionJvms.requireUcx();
    MetadataStore store = closeLater(MetadataStores.open(store()));
    WeightVersionStore versions = store.versions();
    ModelArchitecture model = ModelConfigs.load(VersionJvms.MODEL);
    TrainerRankLayout layout =
        new TrainerTopology.Megatron(1, 1, 1).layout(model, DType.F32).ranks().get(0);
    Transport trainer =
        closeLater(ucx.create(new TransportConfig("trainer-0", Duration.ofSeconds(30), Map.of())));
    TrainerBuffers[] sets = {
      closeLater(TrainerBuffers.allocate(layout, trainer::allocate)),
      closeLater(TrainerBuffers.allocate(layout, trainer::allocate))
    };
    VersionedPublisher publisher =
        closeLater(
            VersionedPublisher.builder(trainer, store)
                .model(IDENTITY)
                .slot("0")
                .expectedSlots(List.of("0"))
                .workerId("trainer-0")
                .rank(0)
                .shutdownHook(false)
                .leaseWait(Duration.ofSeconds(30))
                .pollInterval(Duration.ofMillis(10))
                .bufferSet(VersionedTrainer.tensors(layout, sets[0]))
                .bufferSet(VersionedTrainer.tensors(layout, sets[1]))
                .start());
    publisher.publish(0, set -> sets[set].fill(0, 2));

    List<String> cmd = VersionJvms.java(LeaseHoldingReceiver.class.getName());
    cmd.addAll(List.of(store(), IDENTITY, Long.toString(TTL.toMillis())));
    Process receiver =
        new ProcessBuilder(cmd).redirectError(dir.resolve("receiver.log").toFile()).start();
    processes.add(receiver);
    BufferedReader out =
        new BufferedReader(
            new InputStreamReader(receiver.getInputStream(), StandardCharsets.UTF_8));
    String line;
    while ((line = out.readLine()) != null && !line.startsWith("@holding ")) {
      // wait for the receiver to be inside its install, lease held
    }
    assertEquals("@holding step-0", line, "the receiver JVM reads step 0 under a lease");
    publisher.publish(1, set -> sets[set].fill(1, 2));

    // While the receiver lives, a reclaim of step 0's memory is refused, naming the leaseholder.
    versions.release(IDENTITY, "step-0");
    Reclaim early = versions.reclaim(IDENTITY, "step-0", "0", "trainer-0");
    assertFalse(early.granted(), "reclaimed under a live lease: " + early);
    assertEquals(List.of("receiver-0"), early.holders());
    long lastSeenExpiry = versions.leases(IDENTITY, "step-0").get(0).expiresAtMillis();
    sigkill(receiver);
    // Its last renewal's expiry (on a stalled machine the lease may have run out already: the last
    // one seen).
    List<VersionLease> leases = versions.leases(IDENTITY, "step-0");
    assertTrue(
        leases.stream().allMatch(l -> l.holder().equals("receiver-0")),
        "the dead receiver's lease: " + leases);
    long expiry = leases.isEmpty() ? lastSeenExpiry : leases.get(0).expiresAtMillis();

    AtomicLong writtenAt = new AtomicLong();
    publisher.publish(
        2,
        set -> {
          writtenAt.set(System.currentTimeMillis());
          assertEquals(0, set, "step 2 goes into the set that held step 0");
          sets[set].fill(2, 2);
        });
    long done = System.currentTimeMillis();
    System.out.println(
        "lease expired at "
            + expiry
            + ", set rewritten at "
            + writtenAt.get()
            + " (+"
            + (writtenAt.get() - expiry)
            + " ms), publish returned +"
            + (done - expiry)
            + " ms");
    assertTrue(
        writtenAt.get() >= expiry,
        "buffer set overwritten " + (expiry - writtenAt.get()) + " ms before the lease expired");
    assertTrue(
        writtenAt.get() - expiry < 10_000,
        "the trainer proceeded " + (writtenAt.get() - expiry) + " ms after the TTL");
    assertTrue(version(store, "step-0").isEmpty(), "step 0 reclaimed");

    LayoutRefitEndToEndTest.CheckingInstaller installer = checking(0, 1);
    VersionFollower live = follower(ucx, store, "receiver-live", 0, 1, installer, () -> {});
    // A fresh follower would begin with the newest (step 2); step 1's set, untouched by the
    // rewrite, is read first on purpose.
    VersionFollower.Followed got = live.followStep(1, Duration.ofSeconds(60));
    assertEquals(1, got.step(), "the version the lease expiry did not disturb");
    assertInstalled(1, live, installer);
    assertEquals(2, live.next(Duration.ofSeconds(30)).step());
    assertInstalled(2, live, installer);
  }

  /**
   * A receiver JVM writing its live weights in place is SIGKILLed part-way through its install (its
   * first landing batch has overwritten live memory): the trainer (this JVM, one rank over shm, one
   * buffer set) waits out only the dead receiver's lease TTL to publish the next step, and the
   * receiver restarted under the same name installs that step cleanly, every live element equal to
   * the generator's.
   */
  @Test
  void aReceiverKilledPartWayThroughAnInPlaceInstallRefitsCleanlyWhenRestarted() throws Exception {
    TransportProvider shm = VersionJvms.requireTransport("shm");
    MetadataStore store = closeLater(MetadataStores.open(store()));
    ModelArchitecture model = ModelConfigs.load(VersionJvms.MODEL);
    TrainerRankLayout layout =
        new TrainerTopology.Megatron(1, 1, 1).layout(model, DType.F32).ranks().get(0);
    Transport trainer =
        closeLater(shm.create(new TransportConfig("trainer-0", Duration.ofSeconds(30), Map.of())));
    TrainerBuffers set = closeLater(TrainerBuffers.allocate(layout, trainer::allocate));
    VersionedPublisher publisher =
        closeLater(
            VersionedPublisher.builder(trainer, store)
                .model(IDENTITY)
                .slot("0")
                .expectedSlots(List.of("0"))
                .workerId("trainer-0")
                .rank(0)
                .shutdownHook(false)
                .leaseWait(Duration.ofSeconds(60))
                .pollInterval(Duration.ofMillis(10))
                .bufferSet(VersionedTrainer.tensors(layout, set))
                .start());
    publisher.publish(0, s -> set.fill(0, 2));

    Process dying = startInPlaceReceiver("die", "receiver-dying.log");
    assertEquals(
        "@part-way", firstTaggedLine(dying), "the receiver JVM is part-way through step 0");
    sigkill(dying);

    // One buffer set: step 1 overwrites it once the dead receiver's lease ran out.
    publisher.publish(1, s -> set.fill(1, 2));
    Process restarted = startInPlaceReceiver("complete", "receiver-restarted.log");
    assertEquals(
        "@installed step-1 torn=false mismatches=[]",
        firstTaggedLine(restarted),
        "the restarted receiver installs the newest step exactly");
    assertTrue(restarted.waitFor(60, TimeUnit.SECONDS), "the restarted receiver exits");
    assertEquals(0, restarted.exitValue());
  }

  private Process startInPlaceReceiver(String mode, String log) throws Exception {
    List<String> cmd = VersionJvms.java(InPlaceRestartReceiver.class.getName());
    cmd.addAll(List.of(store(), IDENTITY, "shm", Long.toString(TTL.toMillis()), mode));
    Process p = new ProcessBuilder(cmd).redirectError(dir.resolve(log).toFile()).start();
    processes.add(p);
    return p;
  }

  /** The child's first stdout line starting with {@code @}, or null when it exited first. */
  private static String firstTaggedLine(Process p) throws Exception {
    BufferedReader out =
        new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
    String line;
    while ((line = out.readLine()) != null && !line.startsWith("@")) {
      // the JVM's other output
    }
    return line;
  }

  /**
   * Trainer rank 1 is SIGKILLed once a receiver leased step 1 and fetched its tables, before its
   * reads: the receiver fails naming the dead publisher, installs nothing and keeps step 0; so does
   * a second receiver. Both are inference tp=1 (two engines), so each reads from both trainer
   * ranks. Over UCX.
   */
  @Test
  void aPublisherKilledWhileAReceiverReadsItLeavesReceiversOnThePreviousVersionOverUcx()
      throws Exception {
    killWhileReading(VersionJvms.requireUcx());
  }

  /**
   * As over UCX, over shm (one-sided copies from the trainers' mapped memory, checked against their
   * liveness).
   */
  @Test
  void aPublisherKilledWhileAReceiverReadsItLeavesReceiversOnThePreviousVersionOverShm()
      throws Exception {
    killWhileReading(VersionJvms.requireTransport("shm"));
  }

  private void killWhileReading(TransportProvider transport) throws Exception {
    for (int r = 0; r < 2; r++) {
      processes.add(
          VersionJvms.publish(
              dir, store(), IDENTITY, transport.name(), r, 2, "--steps", "2", "--interval", "1"));
    }
    MetadataStore store = closeLater(MetadataStores.open(store()));
    AtomicBoolean killNext = new AtomicBoolean();
    Process victim = processes.get(1);
    Runnable kill =
        () -> {
          if (killNext.compareAndSet(true, false)) {
            try {
              sigkill(victim);
            } catch (Exception e) {
              throw new AssertionError("killing trainer rank 1", e);
            }
          }
        };
    List<VersionFollower> followers = new ArrayList<>();
    List<LayoutRefitEndToEndTest.CheckingInstaller> installers = new ArrayList<>();
    for (int e = 0; e < 2; e++) {
      installers.add(checking(0, 1));
      followers.add(follower(transport, store, "engine-" + e, 0, 1, installers.get(e), kill));
      // Step 0 exactly: a follower with nothing installed would start at the newest READY version,
      // and on a loaded machine step 1 may already be READY when the second one starts.
      followers.get(e).followStep(0, Duration.ofSeconds(120));
      assertInstalled(0, followers.get(e), installers.get(e));
    }
    await(
        "step 1 is READY",
        Duration.ofSeconds(60),
        () -> version(store, "step-1").map(WeightVersion::isReadable).orElse(false));
    killNext.set(true);
    for (int e = 0; e < 2; e++) {
      VersionFollower f = followers.get(e);
      NoReadableVersionException failure =
          assertThrows(
              NoReadableVersionException.class,
              () -> {
                VersionFollower.Followed got = f.next(Duration.ofSeconds(5));
                System.out.println("installed " + got.version().describe() + ": " + got.metrics());
              },
              "engine " + e + " installed a version whose publisher is dead");
      assertTrue(
          failure.getMessage().contains("trainer-1"),
          "engine " + e + " names the dead publisher: " + failure.getMessage());
      assertFalse(killNext.get(), "the publisher was killed under engine 0's lease");
      assertInstalled(0, f, installers.get(e));
    }
  }
}
