package dev.mx.plan;

import dev.mx.api.plan.CompactSegments;
import dev.mx.api.plan.PullSegment;
import dev.mx.api.plan.TransferPlan;
import dev.mx.api.transport.ReadDescriptor;
import java.util.AbstractList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.RandomAccess;
import java.util.function.ToLongFunction;

/**
 * An immutable list of {@link PullSegment}s stored column-wise in primitive arrays (about 28 bytes
 * per segment, no object per segment). Plans can hold millions of segments; as objects they would
 * be a long-lived graph the garbage collector copies again and again, as columns they are a handful
 * of arrays. {@link #get} builds the record on demand (value-equal every time). {@link
 * TransferPlan} keeps a {@code SegmentList} as is instead of copying it ({@link CompactSegments}).
 */
public final class SegmentList extends AbstractList<PullSegment>
    implements CompactSegments, RandomAccess {
  private static final SegmentList EMPTY = new Builder(0).build();

  private final String[] sessions;
  private final String[] params;
  private final int[] sessionIndex;
  private final int[] paramIndex;
  private final long[] srcAddr;
  private final long[] dstByte;
  private final long[] nbytes;
  private final int size;

  private SegmentList(Builder b) {
    this.size = b.size;
    this.sessions = b.sessions.toArray(new String[0]);
    this.params = b.params.toArray(new String[0]);
    // The builder never writes below its size again, so its arrays can be shared unless mostly
    // empty.
    boolean trim = b.srcAddr.length - size > size / 8;
    this.sessionIndex = trim ? Arrays.copyOf(b.sessionIndex, size) : b.sessionIndex;
    this.paramIndex = trim ? Arrays.copyOf(b.paramIndex, size) : b.paramIndex;
    this.srcAddr = trim ? Arrays.copyOf(b.srcAddr, size) : b.srcAddr;
    this.dstByte = trim ? Arrays.copyOf(b.dstByte, size) : b.dstByte;
    this.nbytes = trim ? Arrays.copyOf(b.nbytes, size) : b.nbytes;
  }

  public static SegmentList of() {
    return EMPTY;
  }

  /** A compact copy of any segment list. */
  public static SegmentList copyOf(List<PullSegment> segments) {
    if (segments instanceof SegmentList s) {
      return s;
    }
    Builder b = new Builder(segments.size());
    for (PullSegment s : segments) {
      b.add(s.session(), s.srcAddr(), s.paramName(), s.dstByte(), s.nbytes());
    }
    return b.build();
  }

  @Override
  public PullSegment get(int i) {
    return new PullSegment(session(i), srcAddr(i), paramName(i), dstByte(i), nbytes(i));
  }

  @Override
  public int size() {
    return size;
  }

  /** Column accessors: read fields without building the record. */
  public String session(int i) {
    return sessions[sessionIndex[checkIndex(i)]];
  }

  public long srcAddr(int i) {
    return srcAddr[checkIndex(i)];
  }

  public String paramName(int i) {
    return params[paramIndex[checkIndex(i)]];
  }

  public long dstByte(int i) {
    return dstByte[checkIndex(i)];
  }

  public long nbytes(int i) {
    return nbytes[checkIndex(i)];
  }

  /** Σ nbytes. */
  @Override
  public long totalBytes() {
    long t = 0;
    for (int i = 0; i < size; i++) {
      t += nbytes[i];
    }
    return t;
  }

  /**
   * The reads of these segments: {@code base(param) + dstByte} for each, in order. The result
   * shares this list's columns and adds one array of destination addresses; {@code base} is called
   * once per distinct destination name.
   */
  public List<ReadDescriptor> toDescriptors(ToLongFunction<String> base) {
    long[] bases = new long[params.length];
    for (int p = 0; p < params.length; p++) {
      bases[p] = base.applyAsLong(params[p]);
    }
    long[] dst = new long[size];
    for (int i = 0; i < size; i++) {
      dst[i] = bases[paramIndex[i]] + dstByte[i];
    }
    return new Descriptors(dst);
  }

  /**
   * Read descriptors over the columns of a {@link SegmentList}; {@link #get} builds each on demand.
   */
  private final class Descriptors extends AbstractList<ReadDescriptor> implements RandomAccess {
    private final long[] dstAddr;

    Descriptors(long[] dstAddr) {
      this.dstAddr = dstAddr;
    }

    @Override
    public ReadDescriptor get(int i) {
      return new ReadDescriptor(session(i), srcAddr[i], dstAddr[checkIndex(i)], nbytes[i]);
    }

    @Override
    public int size() {
      return size;
    }
  }

  private int checkIndex(int i) {
    return java.util.Objects.checkIndex(i, size);
  }

  /** Appends segments; not thread-safe. Session and parameter names are stored once each. */
  public static final class Builder {
    private final List<String> sessions = new java.util.ArrayList<>();
    private final List<String> params = new java.util.ArrayList<>();
    private final Map<String, Integer> sessionIds = new HashMap<>();
    private final Map<String, Integer> paramIds = new HashMap<>();
    private String lastSession;
    private int lastSessionId;
    private String lastParam;
    private int lastParamId;
    private int[] sessionIndex;
    private int[] paramIndex;
    private long[] srcAddr;
    private long[] dstByte;
    private long[] nbytes;
    private int size;

    public Builder(int expectedSize) {
      int n = Math.max(4, expectedSize);
      sessionIndex = new int[n];
      paramIndex = new int[n];
      srcAddr = new long[n];
      dstByte = new long[n];
      nbytes = new long[n];
    }

    /** Appends one segment, with the same checks as {@link PullSegment}. */
    public Builder add(String session, long src, String paramName, long dst, long length) {
      if (length < 0 || dst < 0) {
        throw new IllegalArgumentException(
            "segment into '"
                + paramName
                + "' from session '"
                + session
                + "' has negative dst_byte "
                + dst
                + " or nbytes "
                + length);
      }
      if (size == srcAddr.length) {
        grow();
      }
      if (session != lastSession) {
        lastSessionId =
            sessionIds.computeIfAbsent(
                session,
                s -> {
                  sessions.add(s);
                  return sessions.size() - 1;
                });
        lastSession = session;
      }
      if (paramName != lastParam) {
        lastParamId =
            paramIds.computeIfAbsent(
                paramName,
                p -> {
                  params.add(p);
                  return params.size() - 1;
                });
        lastParam = paramName;
      }
      sessionIndex[size] = lastSessionId;
      paramIndex[size] = lastParamId;
      srcAddr[size] = src;
      dstByte[size] = dst;
      nbytes[size] = length;
      size++;
      return this;
    }

    public int size() {
      return size;
    }

    private void grow() {
      int n = Math.max(srcAddr.length + (srcAddr.length >> 1), 16);
      sessionIndex = Arrays.copyOf(sessionIndex, n);
      paramIndex = Arrays.copyOf(paramIndex, n);
      srcAddr = Arrays.copyOf(srcAddr, n);
      dstByte = Arrays.copyOf(dstByte, n);
      nbytes = Arrays.copyOf(nbytes, n);
    }

    public SegmentList build() {
      return new SegmentList(this);
    }
  }
}
