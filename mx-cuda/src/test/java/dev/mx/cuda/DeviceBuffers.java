package dev.mx.cuda;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;

/** Test helpers: host bytes to and from device allocations. */
final class DeviceBuffers {
  private DeviceBuffers() {}

  /**
   * A device allocation of {@code bytes.length + offset + slack} holding {@code bytes} at {@code
   * offset}.
   */
  static DeviceAllocation upload(byte[] bytes, long offset) {
    DeviceAllocation a = DeviceAllocation.allocate(0, bytes.length + offset + 64);
    if (bytes.length > 0) {
      try (Arena arena = Arena.ofConfined()) {
        MemorySegment host = arena.allocate(bytes.length);
        MemorySegment.copy(bytes, 0, host, ValueLayout.JAVA_BYTE, 0, bytes.length);
        a.copyFrom(host, offset);
      }
    }
    return a;
  }

  static byte[] download(DeviceAllocation a, long offset, long length) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment host = arena.allocate(Math.max(1, length));
      if (length > 0) {
        a.copyTo(offset, host.asSlice(0, length));
      }
      return host.asSlice(0, length).toArray(ValueLayout.JAVA_BYTE);
    }
  }

  static byte[] random(int n, long seed) {
    byte[] b = new byte[n];
    SplittableRandom r = new SplittableRandom(seed);
    for (int i = 0; i < n; i++) {
      b[i] = (byte) r.nextInt();
    }
    return b;
  }
}
