package dev.mx.refit.cast;

import java.io.IOException;
import java.io.InputStream;
import java.util.zip.GZIPInputStream;

/** Reads the checked-in reference vectors of the quantizer tests (test resources, gzip or not). */
public final class TestVectors {
  private TestVectors() {}

  /** The shape a vectors.json lists as an array of dimensions. */
  public static dev.mx.api.Shape shape(com.fasterxml.jackson.databind.JsonNode dims) {
    long[] d = new long[dims.size()];
    for (int i = 0; i < d.length; i++) {
      d[i] = dims.get(i).asLong();
    }
    return dev.mx.api.Shape.of(d);
  }

  /** The bytes of {@code /dir/name}, gunzipped when the name ends in {@code .gz}. */
  public static byte[] read(String dir, String name) throws IOException {
    try (InputStream in = TestVectors.class.getResourceAsStream("/" + dir + "/" + name)) {
      if (in == null) {
        throw new IOException("missing test resource " + dir + "/" + name);
      }
      return (name.endsWith(".gz") ? new GZIPInputStream(in) : in).readAllBytes();
    }
  }
}
