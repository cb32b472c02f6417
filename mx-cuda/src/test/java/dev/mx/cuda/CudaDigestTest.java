package dev.mx.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.error.DigestMismatchException;
import dev.mx.digest.GoldenVectors;
import dev.mx.digest.ShardDigest;
import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The device digest equals the CPU digest bit for bit (GPU only; skips with the cause elsewhere).
 */
class CudaDigestTest {

  @BeforeEach
  void needsCuda() {
    CudaTestSupport.assumeCuda();
  }

  @Test
  void goldenVectorsAtEveryAlignment() {
    for (GoldenVectors.Vector v : GoldenVectors.all()) {
      byte[] input = v.input();
      for (long offset : new long[] {0, 1, 2, 3, 5, 16, 4097}) {
        try (DeviceAllocation a = DeviceBuffers.upload(input, offset)) {
          assertEquals(
              v.digest(),
              CudaDigest.digest(0, a.segment().address() + offset, input.length),
              v.name() + " at byte offset " + offset);
        }
      }
    }
  }

  @Test
  void randomBuffersOfManyLengthsAndOffsetsMatchTheCpuScalars() {
    long[] lengths = {
      1,
      2,
      3,
      4,
      5,
      7,
      1023,
      4092,
      4095,
      4096,
      4097,
      4099,
      8191,
      8192,
      12291,
      65_539,
      1 << 20,
      (1 << 20) + 7,
      3 * 4096 * 1000 + 1,
      16 * 1024 * 1024 + 4094
    };
    long[] offsets = {0, 1, 2, 3, 4, 7, 13, 16, 255};
    long seed = 1;
    for (long length : lengths) {
      byte[] bytes = DeviceBuffers.random((int) length, seed++);
      MemorySegment host = MemorySegment.ofArray(bytes);
      long[] expected = ShardDigest.scalars(host);
      for (long offset : offsets) {
        try (DeviceAllocation a = DeviceBuffers.upload(bytes, offset)) {
          long address = a.segment().address() + offset;
          assertArrayEquals(
              expected,
              CudaDigest.scalars(0, address, length),
              length + " bytes at offset " + offset);
          assertEquals(
              ShardDigest.digest(host),
              CudaDigest.digest(0, address, length),
              length + " bytes at offset " + offset);
        }
      }
    }
  }

  @Test
  void theProviderDigestsDeviceMemoryOnTheDeviceAndHostMemoryOnTheCpu() {
    byte[] bytes = DeviceBuffers.random(1_000_003, 42);
    CudaDigestProvider provider = new CudaDigestProvider();
    try (DeviceAllocation a = DeviceBuffers.upload(bytes, 3)) {
      String cpu = ShardDigest.digest(MemorySegment.ofArray(bytes));
      assertEquals(cpu, provider.digest(a.segment().asSlice(3, bytes.length)));
      assertEquals(cpu, provider.digest(MemorySegment.ofArray(bytes)));
    }
  }

  @Test
  void aCorruptedDeviceByteFailsVerificationNamingTheShard() {
    byte[] bytes = DeviceBuffers.random(3 * 4096 + 10, 7);
    String published = ShardDigest.digest(MemorySegment.ofArray(bytes));
    try (DeviceAllocation a = DeviceBuffers.upload(bytes, 0)) {
      MemorySegment shard = a.segment().asSlice(0, bytes.length);
      CudaDigest.verify(
          "model.layers.0.mlp.up_proj.weight",
          new long[] {0, 128},
          "trainer-1",
          published,
          0,
          shard);
      // One byte in the middle of the second row changes.
      CudaMemory.fill(a.device(), shard.address() + 4096 + 77, 1, (byte) (bytes[4096 + 77] ^ 0x10));
      DigestMismatchException e =
          assertThrows(
              DigestMismatchException.class,
              () ->
                  CudaDigest.verify(
                      "model.layers.0.mlp.up_proj.weight",
                      new long[] {0, 128},
                      "trainer-1",
                      published,
                      0,
                      shard));
      assertEquals("model.layers.0.mlp.up_proj.weight", e.source());
      assertEquals("trainer-1", e.publisher());
      assertTrue(e.getMessage().contains("model.layers.0.mlp.up_proj.weight"), e.getMessage());
      assertEquals(published, e.expected());
    }
  }
}
