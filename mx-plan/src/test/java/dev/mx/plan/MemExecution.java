package dev.mx.plan;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.plan.ConvertSource;
import dev.mx.api.plan.FullPullSource;
import dev.mx.api.plan.RecordedCopy;
import dev.mx.api.plan.Shard;
import dev.mx.api.plan.SourceInfo;
import dev.mx.api.plan.StagedShard;
import dev.mx.api.plan.TransferPlan;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.plan.view.StridedView;
import dev.mx.transport.mem.MemTransportProvider;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Executes plans for real: publishers and the receiver are {@code mem} transports over native
 * memory; the receiver reads exact, full-pull, convert and staged-shard segments, replays full
 * pulls and staged shards with {@link StridedView} and casts converts, exactly as a receiver would.
 * Element values come from {@link GlobalTensor}s.
 */
final class MemExecution implements AutoCloseable {
  static final byte FILL = (byte) 0;

  private final Arena arena = Arena.ofConfined();
  private final MemTransportProvider provider = new MemTransportProvider();
  private final Transport receiver = provider.create(TransportConfig.of("receiver"));
  private final Map<String, Transport> publishers = new LinkedHashMap<>();
  private final Map<String, MemorySegment> params = new HashMap<>();
  private final Map<String, DType> paramTypes = new HashMap<>();
  private final List<ReadDescriptor> lastReads = new ArrayList<>();

  /**
   * Publishes the box {@code [offset, offset + shape)} of {@code t} from {@code session}; returns
   * its shard.
   */
  Shard publish(GlobalTensor t, String session, long[] offset, long[] shape) {
    long bytes = Math.max(1, Shape.of(shape).byteSize(t.elsize()));
    MemorySegment seg = arena.allocate(bytes, 8);
    t.writeBox(offset, shape, seg);
    Transport pub =
        publishers.computeIfAbsent(session, s -> provider.create(TransportConfig.of(s)));
    pub.register(seg);
    receiver.connect(session, pub.localMetadata());
    return new Shard(offset, Shape.of(shape), session, seg.address(), t.elsize(), null);
  }

  /**
   * A source whose shards are the given boxes ({@code [offset..., shape...]} pairs), each from its
   * session.
   */
  SourceInfo source(GlobalTensor t, List<String> sessions, List<long[][]> boxes) {
    List<Shard> shards = new ArrayList<>();
    for (int i = 0; i < boxes.size(); i++) {
      shards.add(publish(t, sessions.get(i), boxes.get(i)[0], boxes.get(i)[1]));
    }
    return new SourceInfo(t.shape(), t.dtype(), shards);
  }

  /** A receive buffer of {@code numel} elements, filled with {@link #FILL}. */
  MemorySegment param(String name, long numel, DType dtype) {
    MemorySegment seg = arena.allocate(Math.max(1, numel * dtype.elementSize()), 8);
    seg.fill(FILL);
    receiver.register(seg);
    params.put(name, seg);
    paramTypes.put(name, dtype);
    return seg;
  }

  long base(String param) {
    MemorySegment s = params.get(param);
    if (s == null) {
      throw new IllegalArgumentException("no receive buffer for '" + param + "'");
    }
    return s.address();
  }

  /** Every read the last {@link #execute} issued, exact ones first. */
  List<ReadDescriptor> lastReads() {
    return lastReads;
  }

  /** Reads, replays and casts; afterwards the receive buffers hold the plan's result. */
  void execute(TransferPlan plan) {
    Map<String, MemorySegment> full = new HashMap<>();
    for (FullPullSource f : plan.fullPulls()) {
      MemorySegment s = arena.allocate(Math.max(1, f.globalShape().byteSize(f.elsize())), 8);
      receiver.register(s);
      full.put(f.srcName(), s);
    }
    Map<String, MemorySegment> staging = new HashMap<>();
    for (ConvertSource c : plan.converts()) {
      MemorySegment s =
          arena.allocate(Math.max(1, c.destShape().byteSize(c.srcDtype().elementSize())), 8);
      receiver.register(s);
      staging.put(c.paramName(), s);
    }
    Map<String, MemorySegment> stagedShards = new HashMap<>();
    for (StagedShard st : plan.stagedShards()) {
      MemorySegment s = arena.allocate(Math.max(1, st.shard().byteSize()), 8);
      receiver.register(s);
      if (stagedShards.put(st.segment().paramName(), s) != null) {
        throw new AssertionError(
            "two staged shards share the buffer name " + st.segment().paramName());
      }
    }
    lastReads.clear();
    lastReads.addAll(ReshardPlanner.exactDescriptors(plan, this::base));
    for (FullPullSource f : plan.fullPulls()) {
      lastReads.addAll(ReshardPlanner.descriptors(f.segments(), n -> full.get(n).address()));
    }
    for (ConvertSource c : plan.converts()) {
      lastReads.addAll(ReshardPlanner.descriptors(c.segments(), n -> staging.get(n).address()));
    }
    for (StagedShard st : plan.stagedShards()) {
      lastReads.addAll(
          ReshardPlanner.descriptors(List.of(st.segment()), n -> stagedShards.get(n).address()));
    }
    receiver.read(lastReads);
    for (StagedShard st : plan.stagedShards()) {
      for (RecordedCopy c : st.copies()) {
        replay(stagedShards.get(st.segment().paramName()), st.shard().shape(), st.dtype(), c);
      }
    }
    for (FullPullSource f : plan.fullPulls()) {
      for (RecordedCopy c : f.copies()) {
        replay(full.get(f.srcName()), f.globalShape(), f.dtype(), c);
      }
    }
    for (ConvertSource c : plan.converts()) {
      MemorySegment from = staging.get(c.paramName());
      MemorySegment to = params.get(c.paramName());
      DType toType = paramTypes.get(c.paramName());
      long n = c.destShape().numel();
      for (long i = 0; i < n; i++) {
        GlobalTensor.write(
            to,
            i * toType.elementSize(),
            toType,
            GlobalTensor.read(from, i * c.srcDtype().elementSize(), c.srcDtype()));
      }
    }
  }

  /** The receiver's local re-slice: a strided element copy from staging into the parameter. */
  private void replay(MemorySegment staging, Shape global, DType srcType, RecordedCopy c) {
    StridedView v = StridedView.replay(global, c.opChain(), c.srcName());
    long[] shape = c.destShape().dims();
    long[] vs = v.strides();
    long[] ds = c.destStride();
    MemorySegment to = params.get(c.paramName());
    DType toType = c.destDtype();
    long n = c.destShape().numel();
    long[] idx = new long[shape.length];
    for (long k = 0; k < n; k++) {
      long s = v.offset();
      long t = c.destOffset();
      for (int d = 0; d < shape.length; d++) {
        s += idx[d] * vs[d];
        t += idx[d] * ds[d];
      }
      GlobalTensor.write(
          to,
          t * toType.elementSize(),
          toType,
          GlobalTensor.read(staging, s * srcType.elementSize(), srcType));
      for (int d = shape.length - 1; d >= 0; d--) {
        if (++idx[d] < shape[d]) {
          break;
        }
        idx[d] = 0;
      }
    }
  }

  /** The value of element {@code i} of a receive buffer. */
  long get(String param, long i) {
    DType t = paramTypes.get(param);
    return GlobalTensor.read(params.get(param), i * t.elementSize(), t);
  }

  @Override
  public void close() {
    receiver.close();
    List<Transport> pubs = new ArrayList<>(publishers.values());
    for (int i = pubs.size() - 1; i >= 0; i--) {
      pubs.get(i).close();
    }
    arena.close();
  }
}
