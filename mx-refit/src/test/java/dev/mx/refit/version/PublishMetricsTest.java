package dev.mx.refit.version;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.metrics.RefitListener;
import dev.mx.api.metrics.RefitListeners;
import dev.mx.metadata.memory.MemoryMetadataStore;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The trainer side is measured like the receiver's: each rank's publish of a step reports its
 * stages and its end to the listeners (JVM-wide, JFR included), through a real two-rank {@link
 * VersionedPublisher}.
 */
class PublishMetricsTest {

  /** A test double that keeps every trainer-side call. */
  private static final class Recorder implements RefitListener {
    final List<String> calls = Collections.synchronizedList(new ArrayList<>());

    @Override
    public void publishStageTimed(Publish publish, String stage, double seconds) {
      assertTrue(seconds >= 0, stage + " " + seconds);
      calls.add(publish.slot() + "/" + publish.step() + " " + stage);
    }

    @Override
    public void published(Publish publish, double seconds, String state) {
      assertTrue(seconds >= 0);
      calls.add(publish.slot() + "/" + publish.step() + " published " + state);
    }
  }

  @Test
  void everyPublishReportsItsStagesAndItsEnd(@TempDir Path dir) throws Exception {
    String model = "publish-metrics";
    Recorder recorder = new Recorder();
    Path file = dir.resolve("publish.jfr");
    try (MemoryMetadataStore store = new MemoryMetadataStore(model);
        Recording rec = new Recording();
        RefitListeners.Registration ignored = RefitListeners.register(recorder)) {
      rec.enable("dev.mx.Publish").withThreshold(Duration.ZERO);
      rec.enable("dev.mx.PublishStage").withThreshold(Duration.ZERO);
      rec.start();
      try (TwoRankTrainer trainer =
          new TwoRankTrainer(store, model, Duration.ofSeconds(30), b -> {})) {
        trainer.publishAll(0);
        trainer.publishAll(1);
      }
      rec.stop();
      rec.dump(file);
    }
    List<String> first = List.of("lease_wait_s", "write_s", "digest_s", "slot_s");
    List<String> expected = new ArrayList<>();
    for (long step = 0; step < 2; step++) {
      for (String slot : List.of("0", "1")) {
        if (step > 0) {
          expected.add(slot + "/" + step + " peers_wait_s");
        }
        for (String stage : first) {
          expected.add(slot + "/" + step + " " + stage);
        }
        expected.add(slot + "/" + step + " published " + (slot.equals("0") ? "STAGING" : "READY"));
      }
    }
    assertEquals(expected, recorder.calls);

    List<RecordedEvent> events = RecordingFile.readAllEvents(file);
    long publishes =
        events.stream().filter(e -> e.getEventType().getName().equals("dev.mx.Publish")).count();
    long stages =
        events.stream()
            .filter(e -> e.getEventType().getName().equals("dev.mx.PublishStage"))
            .filter(e -> e.getString("model").equals(model))
            .count();
    assertEquals(4, publishes);
    assertEquals(18, stages);
  }
}
