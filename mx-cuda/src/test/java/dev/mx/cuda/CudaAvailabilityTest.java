package dev.mx.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.digest.DigestProvider;
import dev.mx.api.transport.MemoryKind;
import dev.mx.api.transport.TransportConfig;
import dev.mx.api.transport.TransportProvider;
import dev.mx.transport.cudaipc.CudaIpcTransportProvider;
import java.lang.foreign.Arena;
import java.lang.foreign.SymbolLookup;
import org.junit.jupiter.api.Test;

/**
 * The availability holder, on machines with and without a driver: each branch asserts what it must.
 */
class CudaAvailabilityTest {

  private static boolean driverInstalled() {
    try {
      SymbolLookup.libraryLookup("libcuda.so.1", Arena.global());
      return true;
    } catch (IllegalArgumentException e) {
      return false;
    }
  }

  @Test
  void aMissingDriverIsTheCauseNamingLibcuda() {
    if (driverInstalled()) {
      System.out.println(
          "libcuda.so.1 is installed here: the missing-driver cause cannot occur; "
              + Cuda.describe());
      return;
    }
    assertFalse(Cuda.isAvailable());
    Throwable cause = Cuda.unavailabilityCause();
    assertInstanceOf(UnsatisfiedLinkError.class, cause);
    assertTrue(cause.getMessage().contains("libcuda.so.1"), cause.getMessage());
    assertSame(cause, Cuda.unavailabilityCause(), "probed once, cached");
    UnsatisfiedLinkError e = assertThrows(UnsatisfiedLinkError.class, Cuda::ensureAvailability);
    assertSame(cause, e.getCause());
    assertEquals(0, Cuda.deviceCount());
    assertNull(Cuda.driverVersion());
    assertTrue(Cuda.describe().contains("libcuda.so.1"), Cuda.describe());
    assertThrows(UnsatisfiedLinkError.class, () -> CudaDevice.get(0));
    // Without a driver every address is host memory.
    assertEquals(MemoryKind.HOST, CudaMemory.kindOf(0x1000));
  }

  @Test
  void providersDelegateToTheHolderAndNeverThrow() {
    CudaIpcTransportProvider transport = new CudaIpcTransportProvider();
    CudaDigestProvider digest = new CudaDigestProvider();
    assertEquals("cuda-ipc", transport.name());
    assertEquals("dev.mx:mx-cuda", transport.artifact());
    assertEquals(Cuda.isAvailable(), transport.isAvailable());
    assertEquals(Cuda.isAvailable(), digest.isAvailable());
    assertSame(Cuda.unavailabilityCause(), transport.unavailabilityCause());
    assertSame(Cuda.unavailabilityCause(), digest.unavailabilityCause());
    assertTrue(digest.priority() > 5, "ranks above the CPU digest where available");
    if (!Cuda.isAvailable()) {
      UnsatisfiedLinkError e =
          assertThrows(UnsatisfiedLinkError.class, () -> transport.create(TransportConfig.of("x")));
      assertSame(Cuda.unavailabilityCause(), e.getCause());
    }
  }

  @Test
  void theServiceFilesListBothProviders() {
    assertTrue(
        TransportProvider.registry().providers().stream()
            .anyMatch(p -> p.name().equals("cuda-ipc")),
        "cuda-ipc is found through ServiceLoader");
    assertTrue(
        DigestProvider.registry().providers().stream().anyMatch(p -> p.name().equals("cuda")),
        "the cuda digest is found through ServiceLoader");
  }

  @Test
  void withADriverTheDevicesAreDescribed() {
    CudaTestSupport.assumeCuda();
    assertTrue(Cuda.deviceCount() > 0);
    assertNotNull(Cuda.driverVersion());
    Cuda.ComputeCapability cc = Cuda.computeCapability(0);
    assertTrue(cc.major() >= 8, "the PTX targets compute_80; device 0 is sm " + cc);
    assertTrue(Cuda.multiprocessors(0) > 0);
    assertTrue(Cuda.describe().contains("cuda:0"), Cuda.describe());
    try (DeviceAllocation a = DeviceAllocation.allocate(0, 4096)) {
      assertEquals(MemoryKind.device(0), a.memoryKind());
      assertEquals(MemoryKind.device(0), CudaMemory.kindOf(a.segment().address() + 100));
      a.close(); // idempotent
    }
    try (Arena arena = Arena.ofConfined()) {
      assertEquals(MemoryKind.HOST, CudaMemory.kindOf(arena.allocate(64).address()));
    }
  }
}
