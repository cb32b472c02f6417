package dev.mx.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import dev.mx.digest.ShardDigest;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The arithmetic of the device's piecewise digest without a device: {@code mx_digest_piece.cuh}
 * (which {@code mx_digest_piece} includes) is compiled for the host with a harness that adds each
 * piece as the kernel does (its whole words at their positions, its edge bytes one by one) and
 * copies it; regions of every shape (whole rows, tail words, ragged bytes) cut into pieces at every
 * byte alignment and added in shuffled order must give exactly the CPU digest's scalars ({@link
 * CudaDigest#assemble}, which the device path uses too), and the copies the region's bytes. One
 * flipped bit anywhere changes the digest. Skips, printing why, without a C++ compiler.
 */
class HostDigestPieceTest {

  private record Case(byte[] bytes, long[][] pieces) {}

  @Test
  void piecesAtAnyOffsetInAnyOrderGiveTheCpuDigestAndTheirCopies() throws Exception {
    SplittableRandom random = new SplittableRandom(37);
    List<Case> cases = new ArrayList<>();
    long[] lengths = {
      0, 1, 3, 4, 5, 7, 4095, 4096, 4097, 4099, 8191, 8192, 12_291, 65_539, 3 * 4096 * 7 + 1
    };
    for (long n : lengths) {
      byte[] bytes = new byte[(int) n];
      random.nextBytes(bytes);
      for (int cut : new int[] {1, 2, 3, 5, 17}) {
        cases.add(new Case(bytes, pieces(n, cut, random)));
      }
    }
    // Every bit flipped in a region cut at odd places: start, middle and tail of every row.
    byte[] base = new byte[2 * 4096 + 11];
    random.nextBytes(base);
    long[] flips = {0, 1, 4095, 4096, 6000, 8191, 8192, 8195, 8200, base.length - 1};
    for (long at : flips) {
      byte[] flipped = base.clone();
      flipped[(int) at] ^= (byte) (1 << (at % 8));
      cases.add(new Case(flipped, pieces(base.length, 7, random)));
    }
    cases.add(new Case(base, pieces(base.length, 7, random)));

    ByteBuffer out = runHarness(cases);
    List<String> digests = new ArrayList<>();
    for (int i = 0; i < cases.size(); i++) {
      Case c = cases.get(i);
      long[] acc = new long[5];
      for (int k = 0; k < 5; k++) {
        acc[k] = out.getLong();
      }
      long[] expected = ShardDigest.scalars(MemorySegment.ofArray(c.bytes()));
      assertArrayEquals(
          expected,
          CudaDigest.assemble(c.bytes().length, acc),
          "case " + i + ": " + c.bytes().length + " bytes in " + c.pieces().length + " pieces");
      assertEquals(1, out.getLong(), "case " + i + ": the pieces' copies hold the region");
      digests.add(ShardDigest.hashScalars(CudaDigest.assemble(c.bytes().length, acc)));
    }
    assertEquals(0, out.remaining(), "one result per case");
    String unflipped = digests.getLast();
    for (int f = 0; f < flips.length; f++) {
      String flipped = digests.get(digests.size() - 1 - flips.length + f);
      assertNotEquals(unflipped, flipped, "a bit flipped at byte " + flips[f]);
    }
  }

  /** {@code n} bytes cut at {@code cuts} random places (any alignment), in shuffled order. */
  private static long[][] pieces(long n, int cuts, SplittableRandom random) {
    List<Long> at = new ArrayList<>(List.of(0L, n));
    for (int i = 0; i < cuts && n > 1; i++) {
      at.add(1 + random.nextLong(n - 1));
    }
    List<Long> sorted = at.stream().distinct().sorted().toList();
    List<long[]> out = new ArrayList<>();
    for (int i = 0; i + 1 < sorted.size(); i++) {
      out.add(new long[] {sorted.get(i), sorted.get(i + 1) - sorted.get(i)});
    }
    Collections.shuffle(out, new java.util.Random(random.nextLong()));
    return out.toArray(long[][]::new);
  }

  private static ByteBuffer runHarness(List<Case> cases) throws Exception {
    Path exe = HostHarness.build("digest_piece_harness");
    Path scratch = HostHarness.scratch();
    Path input = scratch.resolve("digest_piece_harness.in");
    try (OutputStream file = Files.newOutputStream(input)) {
      ByteBuffer b = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
      DataOutputStream data = new DataOutputStream(file);
      writeLong(data, b, cases.size());
      for (Case c : cases) {
        writeLong(data, b, c.bytes().length);
        data.write(c.bytes());
        data.write(new byte[(8 - c.bytes().length % 8) % 8]);
        writeLong(data, b, c.pieces().length);
        for (long[] p : c.pieces()) {
          writeLong(data, b, p[0]);
          writeLong(data, b, p[1]);
        }
      }
      data.flush();
    }
    Path output = scratch.resolve("digest_piece_harness.out");
    HostHarness.run(List.of(exe.toString(), input.toString()), output);
    return ByteBuffer.wrap(Files.readAllBytes(output)).order(ByteOrder.LITTLE_ENDIAN);
  }

  private static void writeLong(DataOutputStream data, ByteBuffer b, long v) throws IOException {
    data.write(b.clear().putLong(v).array());
  }
}
