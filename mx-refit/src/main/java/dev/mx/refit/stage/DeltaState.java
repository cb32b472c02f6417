package dev.mx.refit.stage;

import dev.mx.api.annotation.Internal;
import dev.mx.api.error.FalseUnchangedClaimException;
import dev.mx.api.plan.PullSegment;
import dev.mx.api.plan.Shard;
import dev.mx.api.plan.SourceInfo;
import java.lang.ref.Reference;
import java.lang.ref.ReferenceQueue;
import java.lang.ref.WeakReference;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;

/**
 * What one set of receive buffers holds, per source, for delta refits: the publishers' last-changed
 * steps ({@code changed_step}) and digests of the bytes installed there. A source whose every shard
 * still claims the same last-changed step is skipped on the wire — provided its digests are those
 * held, else the publisher's claim is false and the refit fails closed naming the tensor. The
 * receiver asks only about sources it reads exactly or stages, not those replayed out of full-pull
 * or convert staging. Forgotten on any failed refit, so the next one pulls everything. Thread-safe:
 * receivers taking turns on one set of live weights share one.
 */
@Internal
public final class DeltaState {
  /** The claim (last-changed steps) and the digests of one source, each shard in a fixed order. */
  private record Held(List<Long> changedSteps, List<String> digests) {}

  private final Map<String, Held> held = new HashMap<>();

  /**
   * One state per set of live weights, by identity, dropped with them: every receiver writing the
   * same in-place target must see what the others installed there, or that a step tore it.
   */
  private static final Map<IdentityKey, DeltaState> BY_TARGET = new HashMap<>();

  private static final ReferenceQueue<Object> GONE = new ReferenceQueue<>();

  /** A weak key compared by identity: two targets that merely compare equal hold other bytes. */
  private static final class IdentityKey extends WeakReference<Object> {
    private final int hash;

    IdentityKey(Object target, ReferenceQueue<Object> queue) {
      super(target, queue);
      this.hash = System.identityHashCode(target);
    }

    @Override
    public int hashCode() {
      return hash;
    }

    @Override
    public boolean equals(Object o) {
      return o == this || (o instanceof IdentityKey k && k.get() != null && k.get() == get());
    }
  }

  /** The state of the live weights {@code target}, shared by every receiver that writes them. */
  public static DeltaState of(Object target) {
    synchronized (BY_TARGET) {
      for (Reference<?> r; (r = GONE.poll()) != null; ) {
        BY_TARGET.remove(r);
      }
      return BY_TARGET.computeIfAbsent(
          new IdentityKey(Objects.requireNonNull(target, "target"), GONE), k -> new DeltaState());
    }
  }

  /**
   * The sources of {@code used} the publishers claim unchanged since this buffer set was filled.
   *
   * @throws FalseUnchangedClaimException naming the first source claimed unchanged whose digest
   *     changed
   */
  public synchronized Set<String> unchanged(
      Map<String, SourceInfo> current, Collection<String> used) {
    Set<String> out = new LinkedHashSet<>();
    for (String name : used) {
      Held h = held.get(name);
      SourceInfo info = current.get(name);
      if (h == null || info == null) {
        continue;
      }
      List<Shard> shards = ordered(info);
      List<Long> steps = changedSteps(shards);
      if (steps == null || !steps.equals(h.changedSteps())) {
        continue;
      }
      List<String> digests = digests(shards);
      for (int i = 0; i < shards.size(); i++) {
        String was = h.digests().get(i);
        String now = digests.get(i);
        if (was == null ? now != null : !was.equalsIgnoreCase(now)) {
          throw new FalseUnchangedClaimException(
              name, shards.get(i).session(), steps.get(i), was, now);
        }
      }
      out.add(name);
    }
    return out;
  }

  /** Records that this buffer set now holds {@code used} as {@code current} describes them. */
  public synchronized void installed(Map<String, SourceInfo> current, Collection<String> used) {
    for (String name : used) {
      SourceInfo info = current.get(name);
      if (info == null) {
        held.remove(name);
        continue;
      }
      List<Shard> shards = ordered(info);
      List<Long> steps = changedSteps(shards);
      if (steps == null) {
        held.remove(name); // the publisher does not say when it changes: always read it
      } else {
        held.put(name, new Held(steps, digests(shards)));
      }
    }
  }

  /**
   * Forgets everything held: the next refit reads every source (after a failure or a torn step).
   */
  public synchronized void forget() {
    held.clear();
  }

  private static List<Shard> ordered(SourceInfo info) {
    List<Shard> s = new ArrayList<>(info.shards());
    s.sort(
        Comparator.comparing(Shard::session).thenComparing(x -> x.shardOffset(), Arrays::compare));
    return s;
  }

  private static List<Long> changedSteps(List<Shard> shards) {
    List<Long> out = new ArrayList<>(shards.size());
    for (Shard s : shards) {
      if (s.changedStep() == null) {
        return null;
      }
      out.add(s.changedStep());
    }
    return out;
  }

  private static List<String> digests(List<Shard> shards) {
    List<String> out = new ArrayList<>(shards.size());
    for (Shard s : shards) {
      out.add(s.digest());
    }
    return out;
  }

  /** Finds the source a read comes from by the publisher's session and address. */
  public static final class SourceIndex {
    private record Range(long end, String source) {}

    private final Map<String, TreeMap<Long, Range>> bySession = new HashMap<>();

    public SourceIndex(Map<String, SourceInfo> sources) {
      sources.forEach(
          (name, info) -> {
            for (Shard s : info.shards()) {
              bySession
                  .computeIfAbsent(s.session(), k -> new TreeMap<>(Long::compareUnsigned))
                  .put(s.addr(), new Range(s.addr() + s.byteSize(), name));
            }
          });
    }

    /** The source whose shard segment {@code s} reads from, or null when none holds it. */
    public String sourceOf(PullSegment s) {
      TreeMap<Long, Range> m = bySession.get(s.session());
      if (m == null) {
        return null;
      }
      Map.Entry<Long, Range> e = m.floorEntry(s.srcAddr());
      return e == null || Long.compareUnsigned(s.srcAddr(), e.getValue().end()) >= 0
          ? null
          : e.getValue().source();
    }
  }
}
