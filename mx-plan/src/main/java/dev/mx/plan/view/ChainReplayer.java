package dev.mx.plan.view;

import dev.mx.api.Shape;
import dev.mx.api.error.UnsupportedReshardException;
import dev.mx.api.plan.OpSpec;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Replays one op chain. It tracks two layouts of the same shape: the <em>physical</em> one
 * (relative to the storage PyTorch would hold after any copy, which decides what {@code view} may
 * do and when {@code reshape} or {@code contiguous} copy) and the <em>logical</em> one (relative to
 * the root, null once a reshape makes it inexpressible).
 */
final class ChainReplayer {
  private static final Object ABSENT = new Object();

  private final List<OpSpec> chain;
  private final String source;
  private Layout physical;
  private Layout logical;
  private String materializedBy;

  /** A pending tuple from chunk/unbind, waiting for its getitem. */
  private Tuple tuple;

  private record Tuple(String producer, int dim, long splitSize, long count, boolean unbind) {}

  ChainReplayer(Shape global, List<OpSpec> chain, String source) {
    this.chain = chain == null ? List.of() : chain;
    this.source = source;
    this.physical = Layout.contiguous(global.dims());
    this.logical = physical;
  }

  StridedView run() {
    for (OpSpec op : chain) {
      if (tuple != null) {
        indexTuple(op);
      } else {
        apply(op);
      }
    }
    if (tuple != null) {
      throw new UnsupportedReshardException(
          source,
          "op-chain "
              + chain
              + " ends in a tuple of "
              + tuple.count
              + " views from "
              + tuple.producer
              + " that no getitem picks from: not a tensor");
    }
    Layout result = logical != null ? logical : physical;
    return new StridedView(
        result.offset,
        result.shape.clone(),
        result.strides.clone(),
        materializedBy,
        logical != null);
  }

  private void apply(OpSpec op) {
    switch (op.name()) {
      case "narrow" -> narrow(op);
      case "getitem", "__getitem__" -> getitem(op);
      case "transpose" -> {
        int rank = rank();
        int d0 = dim(op, arg(op, 0, "dim0"), rank);
        int d1 = dim(op, arg(op, 1, "dim1"), rank);
        if (rank == 0) {
          return; // a scalar transposes to itself
        }
        int[] perm = identity(rank);
        perm[d0] = d1;
        perm[d1] = d0;
        permute(perm);
      }
      case "t" -> {
        if (rank() > 2) {
          throw fail(op, "t() expects a tensor of at most 2 dims, got " + rank());
        }
        if (rank() == 2) {
          permute(new int[] {1, 0});
        }
      }
      case "permute" -> permute(op);
      case "unsqueeze" -> {
        int d = dim(op, arg(op, 0, "dim"), rank() + 1);
        each(l -> l.unsqueeze(d));
      }
      case "squeeze" -> squeeze(op);
      case "view" -> reshape(op, false);
      case "reshape" -> reshape(op, true);
      case "flatten" -> flatten(op);
      case "contiguous" -> {
        if (!physical.isContiguous()) {
          physical = Layout.contiguous(physical.shape);
          materialize(op);
        }
      }
      case "chunk" -> chunk(op);
      case "unbind" -> {
        requireDims(op);
        int d = dim(op, orDefault(arg(op, 0, "dim"), 0L), rank());
        tuple = new Tuple(op.toString(), d, 1, physical.shape[d], true);
      }
      default ->
          throw new UnsupportedReshardException(
              source, "unsupported op '" + op.name() + "' in op-chain " + chain);
    }
  }

  private void narrow(OpSpec op) {
    requireDims(op);
    int d = dim(op, arg(op, 0, "dim"), rank());
    long size = physical.shape[d];
    long start = integer(op, arg(op, 1, "start"));
    long length = integer(op, arg(op, 2, "length"));
    if (start < -size || start > size) {
      throw fail(
          op,
          "start "
              + start
              + " is outside ["
              + -size
              + ", "
              + size
              + "] for dim "
              + d
              + " of size "
              + size);
    }
    if (start < 0) {
      start += size;
    }
    if (length < 0 || start + length > size) {
      throw fail(
          op, "start " + start + " + length " + length + " exceeds size " + size + " of dim " + d);
    }
    long s = start;
    each(l -> l.slice(d, s, length, 1));
  }

  private void getitem(OpSpec op) {
    List<Object> items = op.args();
    if (items.size() == 1 && items.get(0) instanceof List<?> key && isTupleKey(key)) {
      items = new ArrayList<>(key);
    }
    int consumed = 0;
    int ellipses = 0;
    for (Object item : items) {
      if (isEllipsis(item)) {
        ellipses++;
      } else if (item != null) {
        consumed++;
      }
    }
    if (ellipses > 1) {
      throw fail(op, "an index can only have a single ellipsis");
    }
    if (consumed > rank()) {
      throw fail(op, "too many indices: " + consumed + " for a tensor of " + rank() + " dims");
    }
    int ellipsisSpan = rank() - consumed;
    int cursor = 0;
    for (Object item : items) {
      if (isEllipsis(item)) {
        cursor += ellipsisSpan;
      } else if (item == null) {
        int d = cursor;
        each(l -> l.unsqueeze(d));
        cursor++;
      } else if (item instanceof List<?> slice) {
        slice(op, cursor, slice);
        cursor++;
      } else {
        long size = physical.shape[cursor];
        long i = integer(op, item);
        if (i < -size || i >= size) {
          throw fail(op, "index " + i + " is out of bounds for dim " + cursor + " of size " + size);
        }
        long idx = i < 0 ? i + size : i;
        int d = cursor;
        each(l -> l.select(d, idx));
      }
    }
  }

  /**
   * A Python slice {@code [start, stop(, step)]} with nulls for open ends, clamped like Python's.
   */
  private void slice(OpSpec op, int d, List<?> slice) {
    if (slice.size() < 2 || slice.size() > 3) {
      throw fail(op, "slice " + slice + " must be [start, stop] or [start, stop, step]");
    }
    long size = physical.shape[d];
    long step = slice.size() == 3 && slice.get(2) != null ? integer(op, slice.get(2)) : 1;
    if (step <= 0) {
      throw fail(op, "slice step must be positive, got " + step);
    }
    long start = slice.get(0) == null ? 0 : clampSliceBound(integer(op, slice.get(0)), size);
    long stop = slice.get(1) == null ? size : clampSliceBound(integer(op, slice.get(1)), size);
    long length = stop > start ? (stop - start + step - 1) / step : 0;
    long s = Math.min(start, size);
    each(l -> l.slice(d, s, length, step));
  }

  private static long clampSliceBound(long v, long size) {
    if (v < 0) {
      v += size;
    }
    return Math.max(0, Math.min(v, size));
  }

  /** A list as the single getitem argument is a tuple key unless it looks like one slice. */
  private static boolean isTupleKey(List<?> key) {
    if (key.size() < 2 || key.size() > 3) {
      return true;
    }
    for (Object o : key) {
      if (o != null && !(o instanceof Number)) {
        return true;
      }
    }
    return false;
  }

  private static boolean isEllipsis(Object item) {
    return item instanceof String s && (s.equals("...") || s.equals("Ellipsis"));
  }

  private void permute(OpSpec op) {
    long[] dims = sizes(op, "dims");
    int rank = rank();
    if (dims.length != rank) {
      throw fail(op, "number of dims " + dims.length + " does not match the tensor's " + rank);
    }
    int[] perm = new int[rank];
    boolean[] seen = new boolean[rank];
    for (int i = 0; i < rank; i++) {
      perm[i] = dim(op, dims[i], rank);
      if (seen[perm[i]]) {
        throw fail(op, "dim " + perm[i] + " appears more than once");
      }
      seen[perm[i]] = true;
    }
    permute(perm);
  }

  private void permute(int[] perm) {
    each(l -> l.permute(perm));
  }

  private void squeeze(OpSpec op) {
    Object a = arg(op, 0, "dim");
    boolean[] drop = new boolean[rank()];
    if (a == ABSENT) {
      for (int d = 0; d < rank(); d++) {
        drop[d] = physical.shape[d] == 1;
      }
    } else {
      long[] dims = a instanceof List<?> ? sizes(op, "dim") : new long[] {integer(op, a)};
      for (long dd : dims) {
        if (rank() == 0) {
          dim(op, dd, 1); // a scalar accepts dim 0 / -1 and stays a scalar
          continue;
        }
        int d = dim(op, dd, rank());
        drop[d] = physical.shape[d] == 1;
      }
    }
    for (int d = drop.length - 1; d >= 0; d--) {
      if (drop[d]) {
        int dd = d;
        each(l -> l.squeeze(dd));
      }
    }
  }

  private void reshape(OpSpec op, boolean mayCopy) {
    long[] target = inferSize(op, sizes(op, mayCopy ? "shape" : "size"));
    reshapeTo(op, target, mayCopy);
  }

  private void reshapeTo(OpSpec op, long[] target, boolean mayCopy) {
    Layout viewed = physical.view(target);
    if (viewed == null) {
      if (!mayCopy) {
        throw fail(
            op,
            "view size is not compatible with the input's size "
                + Arrays.toString(physical.shape)
                + " and stride "
                + Arrays.toString(physical.strides)
                + " (at least one dim spans two contiguous"
                + " subspaces); reshape would copy");
      }
      viewed = Layout.contiguous(target);
      materialize(op);
    }
    physical = viewed;
    logical = logical == null ? null : logical.view(target);
  }

  private void flatten(OpSpec op) {
    int rank = rank();
    if (rank == 0) {
      reshapeTo(op, new long[] {1}, true);
      return;
    }
    int start = dim(op, orDefault(arg(op, 0, "start_dim"), 0L), rank);
    int end = dim(op, orDefault(arg(op, 1, "end_dim"), -1L), rank);
    if (start > end) {
      throw fail(op, "start_dim " + start + " comes after end_dim " + end);
    }
    if (start == end) {
      return;
    }
    long[] shape = physical.shape;
    long[] target = new long[rank - (end - start)];
    System.arraycopy(shape, 0, target, 0, start);
    long merged = 1;
    for (int d = start; d <= end; d++) {
      merged *= shape[d];
    }
    target[start] = merged;
    System.arraycopy(shape, end + 1, target, start + 1, rank - end - 1);
    reshapeTo(op, target, true);
  }

  private void chunk(OpSpec op) {
    requireDims(op);
    long chunks = integer(op, arg(op, 0, "chunks"));
    if (chunks <= 0) {
      throw fail(op, "chunks must be positive, got " + chunks);
    }
    int d = dim(op, orDefault(arg(op, 1, "dim"), 0L), rank());
    long size = physical.shape[d];
    long split = (size + chunks - 1) / chunks;
    long count = split == 0 ? chunks : Math.max(1, (size + split - 1) / split);
    tuple = new Tuple(op.toString(), d, split, count, false);
  }

  /** The getitem that follows chunk/unbind: picks one view of the tuple. */
  private void indexTuple(OpSpec op) {
    Tuple t = tuple;
    if (!op.name().equals("getitem") && !op.name().equals("__getitem__")) {
      throw fail(op, "the result of " + t.producer + " is a tuple; only getitem(i) may follow it");
    }
    if (op.args().size() != 1 || !(op.args().get(0) instanceof Number)) {
      throw fail(
          op, "the result of " + t.producer + " is a tuple; it can only be indexed by one integer");
    }
    long i = integer(op, op.args().get(0));
    if (i < -t.count || i >= t.count) {
      throw fail(
          op, "index " + i + " is out of range for the " + t.count + " views of " + t.producer);
    }
    long idx = i < 0 ? i + t.count : i;
    tuple = null;
    if (t.unbind) {
      each(l -> l.select(t.dim, idx));
    } else {
      long start = Math.min(idx * t.splitSize, physical.shape[t.dim]);
      long length = Math.min(t.splitSize, physical.shape[t.dim] - start);
      each(l -> l.slice(t.dim, start, length, 1));
    }
  }

  private void each(java.util.function.UnaryOperator<Layout> f) {
    physical = f.apply(physical);
    if (logical != null) {
      logical = f.apply(logical);
    }
  }

  private void materialize(OpSpec op) {
    if (materializedBy == null) {
      materializedBy = op.toString();
    }
  }

  private int rank() {
    return physical.shape.length;
  }

  private void requireDims(OpSpec op) {
    if (rank() == 0) {
      throw fail(op, op.name() + "() cannot be applied to a 0-dim tensor");
    }
  }

  private long[] inferSize(OpSpec op, long[] sizes) {
    long numel = physical.numel();
    int infer = -1;
    long product = 1;
    for (int i = 0; i < sizes.length; i++) {
      if (sizes[i] == -1) {
        if (infer >= 0) {
          throw fail(op, "only one dimension can be inferred");
        }
        infer = i;
      } else if (sizes[i] < 0) {
        throw fail(op, "invalid shape dimension " + sizes[i]);
      } else {
        product = Math.multiplyExact(product, sizes[i]);
      }
    }
    long[] out = sizes.clone();
    if (infer >= 0) {
      if (product == 0 || numel % product != 0) {
        throw fail(
            op, "shape " + Arrays.toString(sizes) + " is invalid for input of size " + numel);
      }
      out[infer] = numel / product;
    } else if (product != numel) {
      throw fail(op, "shape " + Arrays.toString(sizes) + " is invalid for input of size " + numel);
    }
    return out;
  }

  /** Sizes given as varargs, as one list, or as a keyword. */
  private long[] sizes(OpSpec op, String keyword) {
    List<?> values = op.args();
    if (values.isEmpty() && op.kwargs().get(keyword) instanceof List<?> kw) {
      values = kw;
    } else if (values.size() == 1 && values.get(0) instanceof List<?> only) {
      values = only;
    }
    long[] out = new long[values.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = integer(op, values.get(i));
    }
    return out;
  }

  private static Object arg(OpSpec op, int position, String keyword) {
    if (position < op.args().size()) {
      return op.args().get(position);
    }
    return op.kwargs().containsKey(keyword) ? op.kwargs().get(keyword) : ABSENT;
  }

  private static Object orDefault(Object value, Object fallback) {
    return value == ABSENT ? fallback : value;
  }

  private int dim(OpSpec op, Object value, int rank) {
    return dim(op, integer(op, value), rank);
  }

  private int dim(OpSpec op, long d, int rank) {
    int r = Math.max(rank, 1);
    if (d < -r || d >= r) {
      throw fail(op, "dim " + d + " is out of range [" + -r + ", " + (r - 1) + "]");
    }
    return (int) (d < 0 ? d + r : d);
  }

  private long integer(OpSpec op, Object value) {
    if (value == ABSENT) {
      throw fail(op, "missing argument");
    }
    if (value instanceof Long
        || value instanceof Integer
        || value instanceof Short
        || value instanceof Byte) {
      return ((Number) value).longValue();
    }
    if (value instanceof BigInteger b && b.bitLength() < 64) {
      return b.longValue();
    }
    throw fail(op, "argument " + value + " is not an integer");
  }

  private static int[] identity(int rank) {
    int[] p = new int[rank];
    for (int i = 0; i < rank; i++) {
      p[i] = i;
    }
    return p;
  }

  private UnsupportedReshardException fail(OpSpec op, String why) {
    return new UnsupportedReshardException(
        source, "op " + op + " in op-chain " + chain + ": " + why);
  }
}
