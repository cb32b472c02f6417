package dev.mx.refit;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mx.api.annotation.Stable;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where the receiver's structured records go: one line each, {@code TAG <compact JSON>}, e.g.
 * {@code MX_REFIT_COVERAGE {"schema":"refit-coverage-v1",...}}. The default writes them to the
 * {@code dev.mx.refit.records} logger at the record's level; embedders may collect them instead.
 */
@FunctionalInterface
@Stable
public interface RefitRecords {

  /** Severity of a record, mapped to the logger level by {@link #logging()}. */
  enum Level {
    /** Routine per-step detail (the stage record): logged only where the logger's level allows. */
    DEBUG,
    /** A record a user asked to see at INFO (for a log pipeline that reads INFO only). */
    INFO,
    WARNING
  }

  /** Receives one record; field order is the map's iteration order. */
  void emit(Level level, String tag, Map<String, Object> record);

  /**
   * Records logged as {@code TAG json} lines through slf4j at the record's level. mx emits its
   * routine records (coverage, stages) at DEBUG: INFO lines are sentences for people, so a record
   * reaches INFO only when a user asks for it ({@code MX_REFIT_STAGE_RECORD_LEVEL=info}).
   */
  static RefitRecords logging() {
    return logging(LoggerFactory.getLogger("dev.mx.refit.records"));
  }

  /** As {@link #logging()}, through {@code log}. */
  static RefitRecords logging(Logger log) {
    return (level, tag, record) -> {
      switch (level) {
        case WARNING -> log.warn("{}", line(tag, record));
        case INFO -> log.info("{}", line(tag, record));
        case DEBUG -> {
          if (log.isDebugEnabled()) {
            log.debug("{}", line(tag, record));
          }
        }
      }
    };
  }

  /** The log line for a record: the tag, a space, and the record as compact JSON. */
  static String line(String tag, Map<String, Object> record) {
    return tag + " " + json(record);
  }

  /** A record as compact JSON with fields in iteration order. */
  static String json(Map<String, Object> record) {
    try {
      return Json.MAPPER.writeValueAsString(record);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException(
          "record is not serializable as JSON: " + e.getOriginalMessage(), e);
    }
  }

  /** The shared mapper (thread-safe once configured). */
  final class Json {
    static final ObjectMapper MAPPER = new ObjectMapper();

    private Json() {}
  }
}
