package dev.mx.api.util;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class VectorModuleTest {

  @Test
  void namesTheSwitchOrTheMissingModule() {
    String property = "mx.test.vectormodule.kernel";
    System.setProperty(property, "false");
    try {
      Throwable off = VectorModule.unavailabilityCause(property, "MX_TEST_VECTORMODULE_KERNEL");
      assertTrue(off.getMessage().contains("switched off by -D" + property), off.getMessage());
    } finally {
      System.clearProperty(property);
    }
    Throwable cause = VectorModule.unavailabilityCause(property, "MX_TEST_VECTORMODULE_KERNEL");
    if (ModuleLayer.boot().findModule(VectorModule.NAME).isPresent()) {
      assertNull(cause);
    } else {
      assertEquals(
          "module jdk.incubator.vector is not resolved; run the JVM with --add-modules jdk.incubator.vector",
          cause.getMessage());
    }
  }
}
