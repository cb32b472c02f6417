package dev.mx.refit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.error.DigestMismatchException;
import dev.mx.api.metrics.RefitListener;
import dev.mx.api.metrics.RefitListeners;
import dev.mx.refit.jfr.JfrRefitListener;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The metrics SPI as a receiver drives it, and the JFR events the built-in listener records. */
class RefitEventsTest {

  /** A test double that writes down every call as a line. */
  static final class TranscriptListener implements RefitListener {
    final List<String> calls = new ArrayList<>();

    @Override
    public void refitStarted(Refit refit) {
      calls.add("started " + refit.step());
    }

    @Override
    public void stageTimed(Refit refit, String stage, double seconds) {
      calls.add("stage " + stage);
    }

    @Override
    public void shardsVerified(Refit refit, long verified, long unverifiable) {
      calls.add("verified " + verified + "/" + unverifiable);
    }

    @Override
    public void verificationFailed(Refit refit, String source, String peer, String detail) {
      calls.add("verification failed " + source + " from " + peer);
    }

    @Override
    public void installed(Refit refit) {
      calls.add("installed " + refit.step());
    }

    @Override
    public void refitFinished(Refit refit, Outcome outcome) {
      calls.add("finished " + refit.step() + " " + outcome.label() + " " + outcome.bytes());
    }
  }

  @Test
  void theBuiltInJfrListenerIsDiscovered() {
    assertTrue(
        RefitListeners.discovered().stream().anyMatch(l -> l instanceof JfrRefitListener),
        "META-INF/services registers the JFR listener: " + RefitListeners.discovered());
  }

  @Test
  void aListenerHearsEveryStageOfTheMetricsMapAndTheOutcome() {
    TranscriptListener t = new TranscriptListener();
    try (Harness h = new Harness();
        Receiver r = h.builder(Map.of()).listener(t).build()) {
      Map<String, Object> m = r.updateWeights(1);
      assertEquals("started 1", t.calls.getFirst());
      assertEquals("finished 1 installed " + m.get("bytes_received"), t.calls.getLast());
      assertTrue(t.calls.contains("installed 1"), t.calls.toString());
      assertTrue(
          t.calls.contains(
              "verified " + m.get("verified_shards") + "/" + m.get("unverifiable_shards")),
          t.calls.toString());
      for (String k : m.keySet()) {
        if (k.endsWith("_s")) {
          assertTrue(t.calls.contains("stage " + k), k + " in " + t.calls);
        }
      }
    }
  }

  @Test
  void aListenerThatThrowsDoesNotFailTheRefit() {
    RefitListener broken =
        new RefitListener() {
          @Override
          public void installed(Refit refit) {
            throw new IllegalStateException("listener bug");
          }
        };
    try (Harness h = new Harness();
        Receiver r = h.builder(Map.of()).listener(broken).build()) {
      r.updateWeights(1);
      assertEquals(List.of(1L), h.installer.steps);
    }
  }

  @Test
  void aRecordingHoldsTheRefitAndStageEventsWithTheirFields(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("refit.jfr");
    Map<String, Object> m;
    TranscriptListener t = new TranscriptListener();
    try (Recording rec = new Recording()) {
      for (String e :
          List.of(
              "dev.mx.Refit",
              "dev.mx.RefitStage",
              "dev.mx.PeerRead",
              "dev.mx.VerificationFailure")) {
        rec.enable(e).withThreshold(Duration.ZERO);
      }
      rec.start();
      try (Harness h = new Harness();
          Receiver r = h.builder(Map.of()).build()) {
        m = r.updateWeights(1);
      }
      // A corrupted publisher: the failed refit and its verification failure are recorded too.
      try (Harness h = new Harness()) {
        DiscoveredSources published = h.seed.discovered(h.cluster);
        h.seed.stridedSrc.setAtIndex(ValueLayout.JAVA_FLOAT, 5, -1f);
        try (Receiver r =
            h.builder(Map.of()).discovery(SourceDiscovery.fixed(published)).listener(t).build()) {
          assertThrows(DigestMismatchException.class, () -> r.updateWeights(2));
        }
      }
      rec.stop();
      rec.dump(file);
    }
    assertTrue(Files.size(file) > 0);
    List<RecordedEvent> events = RecordingFile.readAllEvents(file);
    List<RecordedEvent> refits = ofType(events, "dev.mx.Refit");
    assertEquals(2, refits.size(), "one event per refit: " + refits);
    RecordedEvent ok =
        refits.stream().filter(e -> e.getLong("step") == 1).findFirst().orElseThrow();
    assertEquals(0, ok.getInt("rank"));
    assertEquals("installed", ok.getString("outcome"));
    assertEquals(((Number) m.get("bytes_received")).longValue(), ok.getLong("bytes"));
    assertEquals(((Number) m.get("segments")).longValue(), ok.getLong("descriptors"));
    assertEquals("mem", ok.getString("transport"));
    assertNull(ok.getString("failure"));
    assertFalse(ok.getDuration().isNegative());
    RecordedEvent failed =
        refits.stream().filter(e -> e.getLong("step") == 2).findFirst().orElseThrow();
    assertEquals("failed", failed.getString("outcome"));
    assertTrue(failed.getString("failure").contains("DigestMismatchException"), failed.toString());

    // Each stage's events were committed where it ran: inside the refit's own span, with the
    // stage's
    // real duration; a stage run per landing batch (the wire) adds up to the metric.
    Map<String, List<RecordedEvent>> byStage = new TreeMap<>();
    Set<String> failedStages = new TreeSet<>();
    for (RecordedEvent s : ofType(events, "dev.mx.RefitStage")) {
      if (s.getLong("step") == 2) {
        // The failed refit reports the stages it completed, so its time is accounted for.
        failedStages.add(s.getString("stage"));
        continue;
      }
      assertEquals(1, s.getLong("step"));
      // The event's span brackets the timed one (JFR's clock starts just before, ends just after).
      assertTrue(
          s.getDuration("stageTime").toNanos() <= s.getDuration().toNanos() + 1_000, s.toString());
      assertFalse(s.getStartTime().isBefore(ok.getStartTime()), "began inside the refit: " + s);
      assertFalse(s.getEndTime().isAfter(ok.getEndTime()), "ended inside the refit: " + s);
      byStage.computeIfAbsent(s.getString("stage"), k -> new ArrayList<>()).add(s);
    }
    Set<String> expected = new TreeSet<>();
    m.keySet().stream().filter(k -> k.endsWith("_s")).forEach(expected::add);
    assertEquals(expected, byStage.keySet());
    byStage.forEach(
        (stage, list) ->
            assertEquals(
                ((Number) m.get(stage)).doubleValue(),
                list.stream().mapToLong(e -> e.getDuration("stageTime").toNanos()).sum() / 1e9,
                1e-6 * list.size(),
                stage));
    // Their starts are the stages' own: discovery ended before the install began.
    assertFalse(
        byStage
            .get("prepare_discover_s")
            .getFirst()
            .getEndTime()
            .isAfter(byStage.get("install_s").getFirst().getStartTime()),
        byStage.toString());
    assertTrue(failedStages.contains("prepare_discover_s"), failedStages.toString());

    // The pipelined wire reads one peer at a time: one event per peer, together every byte.
    List<RecordedEvent> reads =
        ofType(events, "dev.mx.PeerRead").stream()
            .filter(e -> e.getStartTime().compareTo(ok.getStartTime()) >= 0)
            .filter(e -> e.getEndTime().compareTo(ok.getEndTime()) <= 0)
            .toList();
    assertEquals(
        ((Number) m.get("bytes_received")).longValue(),
        reads.stream().mapToLong(e -> e.getLong("bytes")).sum(),
        reads.toString());
    assertEquals(
        reads.size(), reads.stream().map(e -> e.getString("peer")).distinct().count(), "per peer");

    List<RecordedEvent> failures = ofType(events, "dev.mx.VerificationFailure");
    assertEquals(1, failures.size(), failures.toString());
    assertEquals("strided", failures.getFirst().getString("source"));
    assertEquals("s1", failures.getFirst().getString("peer"));
    assertEquals(2, failures.getFirst().getLong("step"));
    assertTrue(
        t.calls.contains("verification failed strided from s1"), "the SPI saw it too: " + t.calls);
    assertEquals("finished 2 failed 0", t.calls.getLast());
    // The failed refit's completed stages are reported too: its time is accounted for.
    int started = t.calls.lastIndexOf("started 2");
    List<String> failedCalls =
        t.calls.subList(started, t.calls.size()).stream()
            .filter(c -> c.startsWith("stage "))
            .toList();
    assertTrue(failedCalls.contains("stage prepare_discover_s"), t.calls.toString());
    assertTrue(failedCalls.stream().anyMatch(c -> c.startsWith("stage wire")), t.calls.toString());
  }

  private static List<RecordedEvent> ofType(List<RecordedEvent> events, String name) {
    return events.stream().filter(e -> e.getEventType().getName().equals(name)).toList();
  }
}
