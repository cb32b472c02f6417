package dev.mx.metadata;

/**
 * The position of a streaming parser in a document as a JSON path ({@code
 * tensors[3].shards[1].shape}). Pushing and popping costs two array stores; the string is built
 * only when an error needs it.
 */
final class JsonPathCursor {
  private static final int INDEX_MARK = -1;
  private String[] names = new String[8];
  private int[] indices = new int[8];
  private int depth;

  /** Enters an object member. */
  JsonPathCursor field(String name) {
    grow();
    names[depth] = name;
    indices[depth] = INDEX_MARK;
    depth++;
    return this;
  }

  /** Enters an array element. */
  JsonPathCursor index(int i) {
    grow();
    names[depth] = null;
    indices[depth] = i;
    depth++;
    return this;
  }

  /** Leaves the innermost member or element. */
  void pop() {
    depth--;
  }

  private void grow() {
    if (depth == names.length) {
      names = java.util.Arrays.copyOf(names, depth * 2);
      indices = java.util.Arrays.copyOf(indices, depth * 2);
    }
  }

  @Override
  public String toString() {
    if (depth == 0) {
      return "$";
    }
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < depth; i++) {
      if (names[i] != null) {
        if (!sb.isEmpty()) {
          sb.append('.');
        }
        sb.append(names[i]);
      } else {
        sb.append('[').append(indices[i]).append(']');
      }
    }
    return sb.toString();
  }
}
