package dev.mx.refit.stage;

import dev.mx.api.annotation.Internal;
import dev.mx.api.refit.WireGroups;
import dev.mx.api.transport.ReadDescriptor;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The descriptor stage's output for one set of receive buffers: the reads in the wire policy's
 * three groups (staged shards travel with full pulls: both land in staging), their count and bytes,
 * and the same reads grouped by peer. Built once and cached while the plan holds, whatever the wire
 * policy.
 *
 * @param groups exact, full-pull plus staged-shard, and convert reads
 * @param verifiable exact, full-pull and convert reads (what whole-shard verification inspects)
 */
@Internal
public record Descriptors(
    WireGroups groups, List<ReadDescriptor> verifiable, long segments, long bytes) {

  /**
   * Every read, grouped by session in first-seen order (exact, then full and staged, then convert).
   */
  public Map<String, List<ReadDescriptor>> bySession() {
    Map<String, List<ReadDescriptor>> m = new LinkedHashMap<>();
    for (ReadDescriptor d : inWireOrder()) {
      m.computeIfAbsent(d.session(), k -> new ArrayList<>()).add(d);
    }
    return m;
  }

  /** Bytes read from each session, sessions in first-seen order as in {@link #bySession}. */
  public Map<String, Long> bytesPerSession() {
    // Summed in a long per run of one session's reads: a boxed merge per read allocated a Long
    // each.
    Map<String, Long> m = new LinkedHashMap<>();
    String session = null;
    long run = 0;
    for (ReadDescriptor d : inWireOrder()) {
      if (!d.session().equals(session)) {
        if (session != null) {
          m.merge(session, run, Long::sum);
        }
        session = d.session();
        run = 0;
      }
      run += d.nbytes();
    }
    if (session != null) {
      m.merge(session, run, Long::sum);
    }
    return m;
  }

  /**
   * The first read of each session, sessions in first-seen order as in {@link #bySession}, without
   * building the per-session lists (the in-place probe asks every step).
   */
  public Map<String, ReadDescriptor> firstReadPerSession() {
    Map<String, ReadDescriptor> m = new LinkedHashMap<>();
    for (ReadDescriptor d : inWireOrder()) {
      m.putIfAbsent(d.session(), d);
    }
    return m;
  }

  /** Every read: exact, then full and staged, then convert. */
  private Iterable<ReadDescriptor> inWireOrder() {
    return () ->
        java.util.stream.Stream.of(groups.exact(), groups.full(), groups.convert())
            .flatMap(List::stream)
            .iterator();
  }
}
