package dev.mx.refit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.refit.jfr.LeaseEvent;
import dev.mx.refit.jfr.PeerReadEvent;
import dev.mx.refit.jfr.RefitEvent;
import dev.mx.refit.jfr.RefitStageEvent;
import dev.mx.refit.jfr.VerificationFailureEvent;
import dev.mx.refit.jfr.VersionWaitEvent;
import java.util.List;
import jdk.jfr.EventType;
import jdk.jfr.SettingDescriptor;
import org.junit.jupiter.api.Test;

/**
 * Every mx JFR event explains itself in JMC ({@code @Description}) and records no stack trace by
 * default: where a refit event is committed is the same few frames every time.
 */
class RefitEventMetadataTest {

  @Test
  void everyEventHasADescriptionAndNoStackTraceByDefault() {
    for (Class<? extends jdk.jfr.Event> type :
        List.of(
            RefitEvent.class,
            RefitStageEvent.class,
            PeerReadEvent.class,
            VerificationFailureEvent.class,
            VersionWaitEvent.class,
            LeaseEvent.class,
            dev.mx.refit.jfr.PublishEvent.class,
            dev.mx.refit.jfr.PublishStageEvent.class)) {
      EventType t = EventType.getEventType(type);
      assertTrue(
          t.getDescription() != null && t.getDescription().length() > 20,
          t.getName() + " description");
      SettingDescriptor stackTrace =
          t.getSettingDescriptors().stream()
              .filter(s -> s.getName().equals("stackTrace"))
              .findFirst()
              .orElseThrow();
      assertEquals("false", stackTrace.getDefaultValue(), t.getName() + " stackTrace default");
    }
  }
}
