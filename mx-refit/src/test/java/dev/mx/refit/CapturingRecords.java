package dev.mx.refit;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** Test double: keeps every record the receiver emits, in order. */
final class CapturingRecords implements RefitRecords {
  record Entry(Level level, String tag, Map<String, Object> record) {}

  final List<Entry> entries = new ArrayList<>();

  @Override
  public synchronized void emit(Level level, String tag, Map<String, Object> record) {
    entries.add(new Entry(level, tag, Map.copyOf(record)));
  }

  synchronized List<Entry> tagged(String tag) {
    return entries.stream().filter(e -> e.tag().equals(tag)).toList();
  }
}
