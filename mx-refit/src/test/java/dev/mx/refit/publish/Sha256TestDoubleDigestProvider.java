package dev.mx.refit.publish;

import dev.mx.api.digest.DigestProvider;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * Test double of the shard digest (the real one comes from mx-digest): the first 128 bits of
 * SHA-256 over the bytes, as 32 lowercase hex characters. Counts its calls so tests can see digests
 * being recomputed.
 */
final class Sha256TestDoubleDigestProvider extends DigestProvider {
  int calls;

  @Override
  public String name() {
    return "test-double-sha256";
  }

  @Override
  public boolean isAvailable() {
    return true;
  }

  @Override
  public String digest(MemorySegment bytes) {
    calls++;
    try {
      byte[] sha =
          MessageDigest.getInstance("SHA-256").digest(bytes.toArray(ValueLayout.JAVA_BYTE));
      return HexFormat.of().formatHex(sha, 0, 16);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
