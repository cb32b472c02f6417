package dev.mx.refit;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.Map;
import java.util.concurrent.LinkedBlockingQueue;
import org.junit.jupiter.api.Test;
import org.slf4j.event.EventRecordingLogger;
import org.slf4j.event.Level;
import org.slf4j.event.SubstituteLoggingEvent;
import org.slf4j.helpers.SubstituteLogger;

/** Each record is logged at its own level, as one {@code TAG json} line. */
class RefitRecordsTest {

  @Test
  void recordsAreLoggedAtTheirLevel() {
    LinkedBlockingQueue<SubstituteLoggingEvent> events = new LinkedBlockingQueue<>();
    // slf4j's own recording logger: a test double that keeps every event with its level.
    EventRecordingLogger recorder =
        new EventRecordingLogger(new SubstituteLogger("records", events, false), events);
    RefitRecords records = RefitRecords.logging(recorder);
    records.emit(RefitRecords.Level.DEBUG, "MX_REFIT_COVERAGE", Map.of("complete", true));
    records.emit(RefitRecords.Level.INFO, "MX_REFIT_STAGE", Map.of("wire_s", 1));
    records.emit(RefitRecords.Level.WARNING, "MX_REFIT_COVERAGE", Map.of("complete", false));
    List<Level> levels = events.stream().map(SubstituteLoggingEvent::getLevel).toList();
    assertEquals(List.of(Level.DEBUG, Level.INFO, Level.WARN), levels);
    assertEquals(
        "MX_REFIT_COVERAGE {\"complete\":true}",
        events.stream().findFirst().orElseThrow().getArgumentArray()[0]);
  }
}
