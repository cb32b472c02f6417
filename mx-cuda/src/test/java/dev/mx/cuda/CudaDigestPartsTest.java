package dev.mx.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.digest.ShardDigest;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The device's piecewise digest ({@code mx_digest_piece}) on a GPU: regions cut into pieces at any
 * alignment, added in shuffled order where they lie or copied and added in one pass, give the CPU
 * digest of the whole region, and the copies hold the bytes; one flipped bit changes it. GPU only;
 * skips with the cause elsewhere ({@code HostDigestPieceTest} checks the same arithmetic on the
 * host).
 */
class CudaDigestPartsTest {

  @BeforeEach
  void needsCuda() {
    CudaTestSupport.assumeCuda();
  }

  @Test
  void piecesInAnyOrderGiveTheCpuDigestAndCopiedPiecesLandIntact() {
    long[] lengths = {1, 5, 4095, 4097, 12_291, (1 << 20) + 7, 3 * 4096 * 1000 + 1};
    Random random = new Random(11);
    for (long n : lengths) {
      byte[] bytes = DeviceBuffers.random((int) n, n);
      String cpu = ShardDigest.digest(MemorySegment.ofArray(bytes));
      for (long offset : new long[] {0, 1, 3, 16}) {
        try (DeviceAllocation src = DeviceBuffers.upload(bytes, offset);
            DeviceAllocation dst = DeviceBuffers.upload(new byte[(int) n], 5);
            CudaDigestParts inPlace = new CudaDigestParts(0, n);
            CudaDigestParts copied = new CudaDigestParts(0, n)) {
          MemorySegment region = src.segment().asSlice(offset, n);
          MemorySegment into = dst.segment().asSlice(5, n);
          int done = 0;
          for (long[] p : pieces(n, random)) {
            boolean last = inPlace.add(p[0], region.asSlice(p[0], p[1]));
            boolean lastCopy =
                copied.copyAndAdd(p[0], region.asSlice(p[0], p[1]), into.asSlice(p[0], p[1]));
            assertEquals(last, lastCopy);
            done += last ? 1 : 0;
          }
          assertEquals(1, done, "exactly one piece completes the region");
          assertEquals(cpu, inPlace.digest(), n + " bytes at offset " + offset);
          assertEquals(cpu, copied.digest(), n + " bytes at offset " + offset + ", copied");
          assertArrayEquals(bytes, DeviceBuffers.download(dst, 5, n), "the copies");
        }
      }
    }
  }

  @Test
  void aFlippedBitChangesTheDigestAndBadPiecesAreRefused() {
    byte[] bytes = DeviceBuffers.random(2 * 4096 + 11, 3);
    byte[] flipped = bytes.clone();
    flipped[4096 + 3] ^= 0x40;
    String cpu = ShardDigest.digest(MemorySegment.ofArray(bytes));
    try (DeviceAllocation a = DeviceBuffers.upload(flipped, 0);
        CudaDigestParts parts = new CudaDigestParts(0, bytes.length)) {
      MemorySegment region = a.segment().asSlice(0, bytes.length);
      assertThrows(IllegalArgumentException.class, () -> parts.add(8000, region));
      assertThrows(IllegalStateException.class, parts::digest);
      parts.add(0, region.asSlice(0, 4099));
      assertTrue(parts.add(4099, region.asSlice(4099, bytes.length - 4099)));
      assertNotEquals(cpu, parts.digest());
    }
  }

  private static List<long[]> pieces(long n, Random random) {
    List<Long> at = new ArrayList<>(List.of(0L, n));
    for (int i = 0; i < 9 && n > 1; i++) {
      at.add(1 + (long) (random.nextDouble() * (n - 1)));
    }
    List<Long> sorted = at.stream().distinct().sorted().toList();
    List<long[]> out = new ArrayList<>();
    for (int i = 0; i + 1 < sorted.size(); i++) {
      out.add(new long[] {sorted.get(i), sorted.get(i + 1) - sorted.get(i)});
    }
    Collections.shuffle(out, random);
    return out;
  }
}
