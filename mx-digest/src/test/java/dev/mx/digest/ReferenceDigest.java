package dev.mx.digest;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import org.bouncycastle.crypto.digests.Blake2bDigest;

/**
 * A slow, obviously-correct transcription of ModelExpress's {@code tensor_digest} with
 * arbitrary-precision arithmetic (reduced mod 2^64 only when hashed), to check the fast
 * implementation against. Shares no code with it.
 */
final class ReferenceDigest {
  static final BigInteger TWO_64 = BigInteger.ONE.shiftLeft(64);

  private ReferenceDigest() {}

  static String digest(byte[] bytes) {
    return hash(scalars(bytes));
  }

  static List<BigInteger> scalars(byte[] bytes) {
    int n = bytes.length;
    int body = n - n % 4;
    int words = body / 4;
    int rows = words / 1024;
    List<BigInteger> scalars = new ArrayList<>();
    scalars.add(BigInteger.valueOf(n));
    if (rows > 0) {
      BigInteger sum = BigInteger.ZERO;
      BigInteger weighted = BigInteger.ZERO;
      for (int r = 0; r < rows; r++) {
        BigInteger rowSum = BigInteger.ZERO;
        for (int w = 0; w < 1024; w++) {
          rowSum = rowSum.add(BigInteger.valueOf(word(bytes, r * 1024 + w)));
        }
        sum = sum.add(rowSum);
        weighted = weighted.add(rowSum.multiply(BigInteger.valueOf(r + 1)));
      }
      scalars.add(sum);
      scalars.add(weighted);
    }
    int tail = words - rows * 1024;
    if (tail > 0) {
      BigInteger sum = BigInteger.ZERO;
      BigInteger weighted = BigInteger.ZERO;
      for (int i = 0; i < tail; i++) {
        BigInteger w = BigInteger.valueOf(word(bytes, rows * 1024 + i));
        sum = sum.add(w);
        weighted = weighted.add(w.multiply(BigInteger.valueOf(i + 1)));
      }
      scalars.add(sum);
      scalars.add(weighted);
    }
    if (n % 4 != 0) {
      BigInteger ragged = BigInteger.ZERO;
      for (int i = body; i < n; i++) {
        ragged = ragged.add(BigInteger.valueOf(bytes[i] & 0xFF));
      }
      scalars.add(ragged);
      scalars.add(BigInteger.valueOf(n % 4));
    }
    return scalars;
  }

  /** The little-endian signed int32 at word index {@code i}. */
  static int word(byte[] b, int i) {
    int at = 4 * i;
    return (b[at] & 0xFF) | (b[at + 1] & 0xFF) << 8 | (b[at + 2] & 0xFF) << 16 | b[at + 3] << 24;
  }

  static String hash(List<BigInteger> scalars) {
    Blake2bDigest blake = new Blake2bDigest(128);
    for (BigInteger value : scalars) {
      byte[] be = value.mod(TWO_64).toByteArray();
      byte[] le = new byte[8];
      for (int i = 0; i < 8 && i < be.length; i++) {
        le[i] = be[be.length - 1 - i];
      }
      blake.update(le, 0, 8);
    }
    byte[] out = new byte[16];
    blake.doFinal(out, 0);
    return HexFormat.of().formatHex(out);
  }
}
