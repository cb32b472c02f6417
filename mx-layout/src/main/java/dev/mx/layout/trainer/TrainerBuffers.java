package dev.mx.layout.trainer;

import dev.mx.api.metadata.PublishedShard;
import dev.mx.api.metadata.PublishedTensor;
import dev.mx.api.transport.MemoryRegistration;
import dev.mx.api.util.Closeables;
import dev.mx.layout.gen.BoxFill;
import dev.mx.layout.gen.WeightGenerator;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.LongFunction;

/**
 * The native memory of one trainer rank: one zeroed, 64-byte-aligned segment per {@link
 * LocalBuffer}, filled with the generator's values through the rank's aliases. Owns its memory: an
 * arena, or the registrations an allocator ({@link dev.mx.api.transport.Transport#allocate}) handed
 * out; {@link #close()} is idempotent and frees every buffer (stop publishing them first; close the
 * allocating transport after).
 */
public final class TrainerBuffers implements AutoCloseable {
  private static final long ALIGNMENT = 64;
  private static final long MIN_ALIGNMENT = 16;

  private final TrainerRankLayout layout;
  private final Arena arena;
  private final Map<String, MemorySegment> segments;
  private final Map<String, MemoryRegistration> registrations;
  private final AtomicBoolean closed = new AtomicBoolean();

  private TrainerBuffers(
      TrainerRankLayout layout,
      Arena arena,
      Map<String, MemorySegment> segments,
      Map<String, MemoryRegistration> registrations) {
    this.layout = layout;
    this.arena = arena;
    this.segments = segments;
    this.registrations = registrations;
  }

  /**
   * Allocates every buffer of {@code layout}, zeroed (so vocabulary padding is zero), in a shared
   * arena.
   */
  @SuppressWarnings("MustBeClosedChecker") // the returned buffers own the arena; close() closes it
  public static TrainerBuffers allocate(TrainerRankLayout layout) {
    Arena arena = Arena.ofShared();
    try {
      Map<String, MemorySegment> m = new LinkedHashMap<>();
      for (LocalBuffer b : layout.buffers()) {
        m.put(
            b.name(),
            arena.allocate(Math.max(1, b.byteSize()), ALIGNMENT).asSlice(0, b.byteSize()));
      }
      return new TrainerBuffers(layout, arena, Collections.unmodifiableMap(m), Map.of());
    } catch (RuntimeException | Error e) {
      arena.close();
      throw e;
    }
  }

  /**
   * Allocates every buffer of {@code layout} from {@code allocator} (typically {@code
   * transport::allocate}, so a shared-memory transport serves them from mapped memory instead of
   * reading them out of this process), one registration per buffer, each zeroed. The registrations
   * are already registered: hand them to the publisher as they are ({@link #registrations()});
   * closing these buffers closes them. On failure the ones allocated so far are closed.
   */
  public static TrainerBuffers allocate(
      TrainerRankLayout layout, LongFunction<MemoryRegistration> allocator) {
    Map<String, MemoryRegistration> regs = new LinkedHashMap<>();
    try {
      Map<String, MemorySegment> m = new LinkedHashMap<>();
      for (LocalBuffer b : layout.buffers()) {
        MemoryRegistration r = allocator.apply(Math.max(1, b.byteSize()));
        if (r == null) {
          throw new IllegalStateException(
              "the allocator returned no memory for buffer '"
                  + b.name()
                  + "' of trainer rank "
                  + layout.label());
        }
        regs.put(b.name(), r);
        // Element alignment is needed for the generator's accesses; the arena's 64 bytes is only a
        // nicety.
        if (r.segment().byteSize() < b.byteSize() || r.segment().address() % MIN_ALIGNMENT != 0) {
          throw new IllegalStateException(
              "the allocator returned "
                  + r.segment().byteSize()
                  + " bytes at 0x"
                  + Long.toHexString(r.segment().address())
                  + " for buffer '"
                  + b.name()
                  + "' of trainer rank "
                  + layout.label()
                  + ": it needs "
                  + b.byteSize()
                  + " bytes, "
                  + MIN_ALIGNMENT
                  + "-byte aligned");
        }
        // Zeroed like the arena's memory, whatever the allocator promises: vocabulary padding must
        // be zero.
        MemorySegment s = r.segment().asSlice(0, b.byteSize());
        s.fill((byte) 0);
        m.put(b.name(), s);
      }
      return new TrainerBuffers(
          layout, null, Collections.unmodifiableMap(m), Collections.unmodifiableMap(regs));
    } catch (RuntimeException | Error e) {
      try {
        Closeables.closeAll(List.copyOf(regs.values()).reversed());
      } catch (RuntimeException rollback) {
        e.addSuppressed(rollback);
      }
      throw e;
    }
  }

  public TrainerRankLayout layout() {
    return layout;
  }

  /** Every buffer by name, in layout order. */
  public Map<String, MemorySegment> segments() {
    requireOpen();
    return segments;
  }

  public MemorySegment segment(String bufferName) {
    requireOpen();
    MemorySegment s = segments.get(bufferName);
    if (s == null) {
      throw new IllegalArgumentException(
          "rank " + layout.label() + " has no buffer '" + bufferName + "'");
    }
    return s;
  }

  /**
   * The allocator's registrations by buffer name, in layout order (each covers its buffer, possibly
   * with a tail beyond it); empty for buffers from an arena. Owned by these buffers.
   */
  public Map<String, MemoryRegistration> registrations() {
    requireOpen();
    return registrations;
  }

  /** The part of its buffer an alias covers. */
  public MemorySegment slice(AliasShard alias) {
    int elsize = layout.dtype().elementSize();
    return segment(alias.bufferName())
        .asSlice(alias.elementOffset() * elsize, alias.shape().byteSize(elsize));
  }

  /** The absolute address of an alias's first element. */
  public long address(AliasShard alias) {
    return slice(alias).address();
  }

  /**
   * Writes the generator's values of {@code step} through every alias (published or held), on
   * {@code threads} threads ({@code <= 0}: all processors). Padding rows are left untouched (zero).
   */
  public void fill(long step, int threads) {
    fill(name -> step, threads);
  }

  /**
   * As {@link #fill(long, int)} with each tensor's values of the step {@code stepOf} gives for its
   * Hugging Face name (a {@link dev.mx.layout.gen.ChangeSchedule}'s last-changed step).
   */
  public void fill(java.util.function.ToLongFunction<String> stepOf, int threads) {
    List<BoxFill> fills = new ArrayList<>();
    for (AliasShard a : layout.aliases()) {
      fills.add(
          new BoxFill(
              slice(a), layout.dtype(), a.hfName(), a.globalShape(), a.shardOffset(), a.shape()));
    }
    WeightGenerator.fill(fills, stepOf, threads);
  }

  /**
   * This rank's shard-table entries: one per Hugging Face name it holds (in first-alias order),
   * each shard at its absolute address, without digests (the publisher adds them). Replicas are
   * published like owned shards: receivers spread their reads over them.
   */
  public List<PublishedTensor> publishedTensors(String agentName, int deviceId) {
    Map<String, List<PublishedShard>> shards = new LinkedHashMap<>();
    Map<String, AliasShard> first = new LinkedHashMap<>();
    for (AliasShard a : layout.aliases()) {
      first.putIfAbsent(a.hfName(), a);
      shards
          .computeIfAbsent(a.hfName(), k -> new ArrayList<>())
          .add(
              new PublishedShard(
                  agentName, deviceId, address(a), a.shardOffset(), a.shape(), null));
    }
    List<PublishedTensor> out = new ArrayList<>();
    int elsize = layout.dtype().elementSize();
    for (Map.Entry<String, List<PublishedShard>> e : shards.entrySet()) {
      out.add(
          new PublishedTensor(
              e.getKey(),
              layout.dtype().torchLabel(),
              elsize,
              first.get(e.getKey()).globalShape(),
              e.getValue()));
    }
    return out;
  }

  private void requireOpen() {
    if (closed.get()) {
      throw new IllegalStateException("buffers of trainer rank " + layout.label() + " are closed");
    }
  }

  @Override
  public void close() {
    if (closed.compareAndSet(false, true)) {
      if (arena != null) {
        arena.close();
      }
      Closeables.closeAll(List.copyOf(registrations.values()).reversed());
    }
  }
}
