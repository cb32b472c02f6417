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

/** INFO is for sentences people read: the JSON records go to DEBUG, warnings stay warnings. */
class RefitRecordsTest {

  @Test
  void infoAndDebugRecordsAreLoggedAtDebugWarningsAtWarn() {
    LinkedBlockingQueue<SubstituteLoggingEvent> events = new LinkedBlockingQueue<>();
    // slf4j's own recording logger: a test double that keeps every event with its level.
    EventRecordingLogger recorder =
        new EventRecordingLogger(new SubstituteLogger("records", events, false), events);
    RefitRecords records = RefitRecords.logging(recorder);
    records.emit(RefitRecords.Level.INFO, "MX_REFIT_COVERAGE", Map.of("complete", true));
    records.emit(RefitRecords.Level.DEBUG, "MX_REFIT_STAGES", Map.of("wire_s", 1));
    records.emit(RefitRecords.Level.WARNING, "MX_REFIT_COVERAGE", Map.of("complete", false));
    List<Level> levels = events.stream().map(SubstituteLoggingEvent::getLevel).toList();
    assertEquals(List.of(Level.DEBUG, Level.DEBUG, Level.WARN), levels);
    assertEquals(
        "MX_REFIT_COVERAGE {\"complete\":true}",
        events.stream().findFirst().orElseThrow().getArgumentArray()[0]);
  }
}
