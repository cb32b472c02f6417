package dev.mx.api.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.Test;

class MemoryKindTest {

  @Test
  void parsesWhatToStringWrites() {
    assertEquals(MemoryKind.HOST, MemoryKind.parse("host"));
    assertEquals(MemoryKind.HOST, MemoryKind.parse("CPU"));
    assertEquals(MemoryKind.device(0), MemoryKind.parse("cuda"));
    assertEquals(MemoryKind.device(3), MemoryKind.parse(" cuda:3 "));
    assertEquals(MemoryKind.device(7), MemoryKind.parse(MemoryKind.device(7).toString()));
    assertEquals("host", MemoryKind.HOST.toString());
    assertTrue(MemoryKind.device(1).isDevice());
    assertFalse(MemoryKind.HOST.isDevice());
  }

  @Test
  void rejectsNonsenseNamingIt() {
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> MemoryKind.parse("tpu"));
    assertTrue(e.getMessage().contains("tpu"), e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> MemoryKind.parse("cuda:x"));
    assertThrows(IllegalArgumentException.class, () -> MemoryKind.device(-1));
    assertThrows(IllegalArgumentException.class, () -> new MemoryKind(MemoryKind.Location.HOST, 0));
  }

  @Test
  void registrationsAreHostMemoryUnlessTheySayOtherwise() {
    MemoryRegistration r =
        new MemoryRegistration() {
          @Override
          public MemorySegment segment() {
            return MemorySegment.NULL;
          }

          @Override
          public void close() {}
        };
    assertEquals(MemoryKind.HOST, r.memoryKind());
  }
}
