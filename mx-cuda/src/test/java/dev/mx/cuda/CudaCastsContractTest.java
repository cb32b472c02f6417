package dev.mx.cuda;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import org.junit.jupiter.api.Test;

/** What the device casts accept, checked before any driver call (runs everywhere). */
class CudaCastsContractTest {

  @Test
  void theDeviceConvertsTheFloatTypesOfTheKernels() {
    for (DType a : new DType[] {DType.F32, DType.BF16, DType.F16, DType.F8_E4M3FN, DType.F8_E5M2}) {
      for (DType b :
          new DType[] {DType.F32, DType.BF16, DType.F16, DType.F8_E4M3FN, DType.F8_E5M2}) {
        assertTrue(CudaCasts.supports(a, b), a + " -> " + b);
      }
    }
    assertFalse(CudaCasts.supports(DType.F64, DType.F32));
    assertFalse(CudaCasts.supports(DType.I32, DType.I32));
  }

  @Test
  void unsupportedPairsAndBadViewsAreRefusedNamingThem() {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> CudaCasts.convert(0, 0, 8, DType.F64, 0, 4, DType.F32, 1));
    assertTrue(e.getMessage().contains("from f64 to f32"), e.getMessage());
    IllegalArgumentException rank =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                CudaCasts.viewCopy(
                    0,
                    0,
                    DType.F32,
                    new long[] {1, 2},
                    0,
                    DType.F32,
                    new long[] {1},
                    new long[] {2, 2}));
    assertTrue(rank.getMessage().contains("differ in rank"), rank.getMessage());
  }
}
