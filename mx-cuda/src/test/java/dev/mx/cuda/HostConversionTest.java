package dev.mx.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.refit.cast.Casts;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The device conversions without a device: {@code mx_float.cuh} (which the kernels include) is
 * compiled for the host with the machine's C++ compiler and run over every 8- and 16-bit code and
 * 458,752 f32 patterns (every exponent, sign and high mantissa, with low halves that probe rounding
 * ties and sticky bits), and each result must equal mx-refit's CPU cast bit for bit. Skips,
 * printing why, when no compiler is present.
 */
class HostConversionTest {
  private static final DType[] TYPES = {
    DType.F32, DType.BF16, DType.F16, DType.F8_E4M3FN, DType.F8_E5M2
  };
  private static final int[] LOW = {0x0000, 0x0001, 0x7FFF, 0x8000, 0x8001, 0x1000, 0xFFFF};

  @Test
  void everyDeviceConversionEqualsTheCpuCast() throws Exception {
    Path exe = HostHarness.build("convert_harness");
    Path scratch = HostHarness.scratch();
    Path out = scratch.resolve("convert_harness.out");
    HostHarness.run(List.of(exe.toString()), out);
    ByteBuffer results = ByteBuffer.wrap(Files.readAllBytes(out)).order(ByteOrder.LITTLE_ENDIAN);

    List<String> mismatches = new ArrayList<>();
    long compared = 0;
    for (DType from : TYPES) {
      for (DType to : TYPES) {
        if (from == to) {
          continue;
        }
        int pairMismatches = 0;
        if (from == DType.F32) {
          for (int hi = 0; hi < 65536; hi++) {
            for (int lo : LOW) {
              pairMismatches +=
                  compare(from, to, ((long) hi << 16) | lo, results.getInt(), mismatches);
              compared++;
            }
          }
        } else {
          int n = from.elementSize() == 2 ? 65536 : 256;
          for (int c = 0; c < n; c++) {
            pairMismatches += compare(from, to, c, results.getInt(), mismatches);
            compared++;
          }
        }
        if (pairMismatches > 0) {
          mismatches.add(from + "->" + to + ": " + pairMismatches + " mismatches");
        }
      }
    }
    assertEquals(0, results.remaining(), "the harness wrote exactly one result per input");
    assertTrue(compared > 2_000_000, "compared " + compared);
    assertTrue(
        mismatches.isEmpty(),
        "device conversions differ from the CPU casts:\n"
            + String.join("\n", mismatches.subList(0, Math.min(40, mismatches.size()))));
  }

  private static int compare(
      DType from, DType to, long input, int device, List<String> mismatches) {
    long mask = to.elementSize() == 4 ? 0xFFFF_FFFFL : (1L << (8 * to.elementSize())) - 1;
    long cpu = Casts.convertBits(input, from, to) & mask;
    long dev = device & 0xFFFF_FFFFL;
    if (cpu != dev) {
      if (mismatches.size() < 20) {
        mismatches.add(
            String.format("%s 0x%x -> %s: cpu 0x%x, device code 0x%x", from, input, to, cpu, dev));
      }
      return 1;
    }
    return 0;
  }
}
