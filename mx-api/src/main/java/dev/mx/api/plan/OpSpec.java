package dev.mx.api.plan;

import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * One view op of a recorded chain, e.g. {@code narrow(0, 4, 2)}. Arguments are JSON-like values:
 * {@code Long}, {@code List} (a slice {@code [start, stop, step]} with nulls for open ends), {@code
 * String "..."} (ellipsis), or null. Keyword arguments are kept sorted by name.
 */
public record OpSpec(String name, List<Object> args, Map<String, Object> kwargs) {

  public OpSpec {
    Objects.requireNonNull(name, "op name");
    if (name.isBlank()) {
      throw new IllegalArgumentException("op name is blank");
    }
    args =
        args == null
            ? List.of()
            : java.util.Collections.unmodifiableList(new java.util.ArrayList<>(args));
    kwargs =
        kwargs == null || kwargs.isEmpty()
            ? Map.of()
            : java.util.Collections.unmodifiableMap(new TreeMap<>(kwargs));
  }

  /** An op with positional arguments only. */
  public static OpSpec of(String name, Object... args) {
    return new OpSpec(name, java.util.Arrays.asList(args), Map.of());
  }

  public static OpSpec narrow(int dim, long start, long length) {
    return of("narrow", (long) dim, start, length);
  }

  @Override
  public String toString() {
    StringBuilder sb = new StringBuilder(name).append('(');
    for (int i = 0; i < args.size(); i++) {
      if (i > 0) {
        sb.append(", ");
      }
      sb.append(args.get(i));
    }
    kwargs.forEach(
        (k, v) ->
            sb.append(sb.charAt(sb.length() - 1) == '(' ? "" : ", ")
                .append(k)
                .append('=')
                .append(v));
    return sb.append(')').toString();
  }
}
