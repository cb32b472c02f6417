package dev.mx.rl;

import java.nio.charset.StandardCharsets;
import java.util.Comparator;

/** The reference server's string rules: what counts as blank, how an id is quoted. */
public final class RefitText {
  private RefitText() {}

  /** Byte-wise order of UTF-8 encodings, as the reference sorts slot and worker ids. */
  public static final Comparator<String> UTF8_ORDER =
      (a, b) ->
          java.util.Arrays.compareUnsigned(
              a.getBytes(StandardCharsets.UTF_8), b.getBytes(StandardCharsets.UTF_8));

  /**
   * Whether {@code s} is empty after trimming Unicode White_Space (Rust's {@code str::trim}), which
   * differs from {@link String#isBlank()} on U+00A0, U+2007, U+202F, U+0085 and U+001C-1F.
   */
  public static boolean isBlank(String s) {
    for (int i = 0; i < s.length(); i++) {
      if (!isWhiteSpace(s.charAt(i))) {
        return false;
      }
    }
    return true;
  }

  private static boolean isWhiteSpace(char c) {
    return (c >= 0x09 && c <= 0x0D) || c == 0x85 || Character.isSpaceChar(c);
  }

  /**
   * {@code s} in double quotes with {@code \}, {@code "} and control characters escaped, as Rust's
   * {@code {:?}} prints a string (the form of the reference's "UID ... was not found").
   */
  public static String debugQuoted(String s) {
    StringBuilder b = new StringBuilder(s.length() + 2).append('"');
    s.codePoints()
        .forEach(
            cp -> {
              switch (cp) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                case 0 -> b.append("\\0");
                default -> {
                  if (Character.isISOControl(cp)) {
                    b.append("\\u{").append(Integer.toHexString(cp)).append('}');
                  } else {
                    b.appendCodePoint(cp);
                  }
                }
              }
            });
    return b.append('"').toString();
  }

  /** {@code s} with every character outside printable ASCII as {@code \\u{hex}} (for trailers). */
  static String asciiSafe(String s) {
    StringBuilder b = new StringBuilder(s.length());
    s.codePoints()
        .forEach(
            cp -> {
              if (cp >= 0x20 && cp < 0x7F) {
                b.appendCodePoint(cp);
              } else {
                b.append("\\u{").append(Integer.toHexString(cp)).append('}');
              }
            });
    return b.toString();
  }

  /** {@code 'id'} for subjects. */
  public static String q(String s) {
    return "'" + s + "'";
  }

  /** {@code version 'v', slot 's', worker 'w'}: the subject of a refusal about one publication. */
  public static String shardSubject(String versionId, String sourceSlotId, String workerId) {
    return "version " + q(versionId) + ", slot " + q(sourceSlotId) + ", worker " + q(workerId);
  }
}
