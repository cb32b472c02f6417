package dev.mx.refit.stage;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import dev.mx.api.refit.WireGroups;
import dev.mx.api.transport.ReadDescriptor;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Which staged reads fill a staging buffer exactly, so its digest can ride on their copies. */
class StagingReadsTest {
  private static ReadDescriptor read(long dst, long n) {
    return new ReadDescriptor("trainer-0", 1_000_000 + dst, dst, n);
  }

  private static StagingReads of(ReadDescriptor... full) {
    List<ReadDescriptor> reads = List.of(full);
    return StagingReads.of(
        new Descriptors(new WireGroups(List.of(), reads, List.of()), reads, reads.size(), 0));
  }

  @Test
  void readsThatFillABufferEdgeToEdgeAreFoundInAddressOrder() {
    ReadDescriptor a = read(4096, 100);
    ReadDescriptor b = read(4196, 3996);
    ReadDescriptor other = read(8192, 64);
    StagingReads s = of(other, b, a);
    assertEquals(List.of(a, b), s.filling(4096, 4096));
    assertEquals(List.of(other), s.filling(8192, 64));
  }

  @Test
  void aGapAnOverhangOrNothingAtTheFirstByteIsNoFill() {
    StagingReads gap = of(read(0, 10), read(12, 20));
    assertNull(gap.filling(0, 32), "a gap at 10");
    StagingReads overhang = of(read(0, 10), read(10, 30));
    assertNull(overhang.filling(0, 32), "the second read runs past the buffer");
    assertNull(of(read(4, 28)).filling(0, 32), "nothing lands at byte 0");
    assertNull(of(read(0, 10)).filling(0, 32), "the reads stop short");
  }
}
