package dev.mx.digest.safetensors;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The same tensors and metadata give byte-identical files, whatever the metadata map's iteration
 * order.
 */
class SafetensorsDeterminismTest {

  @TempDir Path dir;

  @Test
  void unorderedMetadataIsWrittenSortedByKey() throws Exception {
    Map<String, String> meta = new HashMap<>();
    for (String k :
        List.of("step", "rank", "model", "format", "zeta", "alpha", "trainer", "inference")) {
      meta.put(k, k.toUpperCase(java.util.Locale.ROOT));
    }
    List<SafetensorsTensor> tensors =
        List.of(
            new SafetensorsTensor(
                "w", DType.U8, Shape.of(4), MemorySegment.ofArray(new byte[] {1, 2, 3, 4})));
    SafetensorsWriter.write(dir.resolve("a.safetensors"), tensors, Map.copyOf(meta));
    SafetensorsWriter.write(dir.resolve("b.safetensors"), tensors, meta);
    assertArrayEquals(
        Files.readAllBytes(dir.resolve("a.safetensors")),
        Files.readAllBytes(dir.resolve("b.safetensors")));
    try (SafetensorsFile f = SafetensorsFile.open(dir.resolve("a.safetensors"))) {
      List<String> sorted = new ArrayList<>(meta.keySet());
      sorted.sort(null);
      assertEquals(sorted, List.copyOf(f.metadata().keySet()));
    }
  }
}
