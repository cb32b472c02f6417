package dev.mx.digest;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The golden digest vectors computed by ModelExpress ({@code golden/digest-vectors.tsv}, copied
 * from the project's shared golden files) and the inputs their rules describe. Shared with mx-cli's
 * tests through this module's test jar.
 */
public final class GoldenVectors {

  /** One row of the table: a named input, the rule that produces it, its size and its digest. */
  public record Vector(String name, String rule, long byteCount, String digest) {

    /** The input bytes this vector's rule describes. */
    public byte[] input() {
      byte[] bytes = GoldenVectors.input(name);
      if (bytes.length != byteCount) {
        throw new IllegalStateException(
            "golden input '"
                + name
                + "' has "
                + bytes.length
                + " bytes but the table says "
                + byteCount);
      }
      return bytes;
    }
  }

  private GoldenVectors() {}

  /** Every vector of the table, in file order. */
  public static List<Vector> all() {
    List<Vector> out = new ArrayList<>();
    try (InputStream in = GoldenVectors.class.getResourceAsStream("/golden/digest-vectors.tsv")) {
      if (in == null) {
        throw new IllegalStateException(
            "golden/digest-vectors.tsv is missing from the test class path");
      }
      BufferedReader reader = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
      for (String line = reader.readLine(); line != null; line = reader.readLine()) {
        if (line.isBlank() || line.startsWith("#")) {
          continue;
        }
        String[] f = line.split("\t");
        if (f.length != 4) {
          throw new IllegalStateException("golden line without 4 tab-separated fields: " + line);
        }
        out.add(new Vector(f[0], f[1], Long.parseLong(f[2]), f[3]));
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out;
  }

  /** The input of the vector called {@code name}, built from its rule. */
  public static byte[] input(String name) {
    return switch (name) {
      case "empty" -> new byte[0];
      case "bytes-0-9" -> bytes(10, i -> i);
      case "f32-arange-16" -> {
        ByteBuffer b = le(16 * 4);
        for (int i = 0; i < 16; i++) {
          b.putFloat(i);
        }
        yield b.array();
      }
      case "i32-arange-2048" -> ints(2048, i -> i);
      case "i32-arange-2050" -> ints(2050, i -> i);
      case "bf16-zeros-3" -> new byte[6];
      case "i32-neg" -> ints(3, i -> new int[] {-1, -2, 3}[i]);
      case "u8-affine-1000003" -> bytes(1_000_003, i -> i * 131 + 7);
      case "u8-ff-12291" -> {
        byte[] b = new byte[12291];
        Arrays.fill(b, (byte) 0xFF);
        yield b;
      }
      case "i32-negative-ramp-5001" -> ints(5001, i -> -i * 7919);
      default ->
          throw new IllegalArgumentException("no input rule for golden vector '" + name + "'");
    };
  }

  private interface IntRule {
    int at(int index);
  }

  private static byte[] bytes(int n, IntRule rule) {
    byte[] b = new byte[n];
    for (int i = 0; i < n; i++) {
      b[i] = (byte) rule.at(i);
    }
    return b;
  }

  private static byte[] ints(int n, IntRule rule) {
    ByteBuffer b = le(n * 4);
    for (int i = 0; i < n; i++) {
      b.putInt(rule.at(i));
    }
    return b.array();
  }

  private static ByteBuffer le(int size) {
    return ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
  }
}
