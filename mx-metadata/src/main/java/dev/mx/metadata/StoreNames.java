package dev.mx.metadata;

import dev.mx.api.annotation.Internal;
import java.nio.charset.StandardCharsets;

/**
 * Turns identities and worker ids into file names and Redis key parts that cannot collide: every
 * byte outside {@code [A-Za-z0-9._-]} is percent-encoded (so {@code :} and {@code /} never appear),
 * and a name never starts with a dot (temporary files do). For the store implementations of this
 * module.
 */
@Internal
public final class StoreNames {
  private static final char[] HEX = "0123456789ABCDEF".toCharArray();

  private StoreNames() {}

  /** The encoded form of {@code name}. */
  public static String encode(String name) {
    byte[] utf8 = name.getBytes(StandardCharsets.UTF_8);
    StringBuilder sb = new StringBuilder(utf8.length + 8);
    for (int i = 0; i < utf8.length; i++) {
      int b = utf8[i] & 0xff;
      boolean plain =
          (b >= 'a' && b <= 'z')
              || (b >= 'A' && b <= 'Z')
              || (b >= '0' && b <= '9')
              || b == '_'
              || b == '-'
              || (b == '.' && i > 0);
      if (plain) {
        sb.append((char) b);
      } else {
        sb.append('%').append(HEX[b >> 4]).append(HEX[b & 15]);
      }
    }
    return sb.toString();
  }
}
