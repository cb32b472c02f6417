package dev.mx.layout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** T10, BS12: a size beyond an int names the limit; a non-number still says it is not one. */
class TopologySpecTest {

  @Test
  void aValueBeyondAnIntNamesTheLimit() {
    LayoutException e =
        assertThrows(
            LayoutException.class, () -> TopologySpec.parse("tp=2,ep=99999999999", "trainer"));
    assertEquals(
        "trainer topology 'tp=2,ep=99999999999': ep 99999999999 is above the limit of 2147483647",
        e.getMessage());
    LayoutException notANumber =
        assertThrows(LayoutException.class, () -> TopologySpec.parse("tp=two", "inference"));
    assertEquals(
        "inference topology 'tp=two': tp is not an integer: 'two'", notANumber.getMessage());
    assertEquals(Map.of("tp", 4, "pp", 2), TopologySpec.parse("TP=4, pp=2", "trainer"));
  }
}
