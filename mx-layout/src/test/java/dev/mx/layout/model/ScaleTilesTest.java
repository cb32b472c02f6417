package dev.mx.layout.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.Box;
import dev.mx.api.DType;
import dev.mx.api.Shape;
import org.junit.jupiter.api.Test;

/** The scale tensor of a tiled weight, and the scales of a box of it. */
class ScaleTilesTest {
  private static final ScaleTiles BLOCKS = new ScaleTiles("_scale_inv", DType.F32, 16, 16);
  private static final ScaleTiles CHANNELS =
      new ScaleTiles("_scale", DType.F32, 1, ScaleTiles.WHOLE);

  private static Box box(long r0, long r1, long c0, long c1) {
    return new Box(new long[] {r0, c0}, new long[] {r1, c1});
  }

  @Test
  void scaleShapesCountTilesPerMatrixDimensionAndKeepAStacksLeadingDimension() {
    assertEquals(Shape.of(3, 2), BLOCKS.scaleShape(Shape.of(40, 32)));
    assertEquals(Shape.of(8, 3, 2), BLOCKS.scaleShape(Shape.of(8, 40, 32)));
    assertEquals(Shape.of(40, 1), CHANNELS.scaleShape(Shape.of(40, 32)));
    assertEquals(
        Shape.of(40, 2), new ScaleTiles("_scale", DType.U8, 1, 32).scaleShape(Shape.of(40, 33)));
    assertEquals("w_scale_inv", BLOCKS.scaleName("w"));
  }

  @Test
  void aBoxOnTileBoundariesHasItsScalesAndTheLastTileMayEndAtTheEdge() {
    assertEquals(box(1, 2, 0, 2), BLOCKS.scaleBox(Shape.of(40, 32), box(16, 32, 0, 32)));
    assertEquals(box(2, 3, 1, 2), BLOCKS.scaleBox(Shape.of(40, 32), box(32, 40, 16, 32)));
    // Per-channel scales: every column slice shares its rows' one scale.
    assertEquals(box(8, 16, 0, 1), CHANNELS.scaleBox(Shape.of(40, 32), box(8, 16, 5, 9)));
  }

  @Test
  void aBoxThatCutsATileHasNoScalesOfItsOwn() {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> BLOCKS.scaleBox(Shape.of(40, 32), box(8, 16, 0, 32)));
    assertEquals("rows [8, 16) of 40 cut a tile of 16 rows", e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () -> BLOCKS.scaleBox(Shape.of(40, 32), box(0, 16, 0, 24)));
    assertTrue(e.getMessage().startsWith("columns [0, 24) of 32"), e.getMessage());
  }

  @Test
  void aMembersRowsAreTakenFromItsOwnStart() {
    // A member of 24 rows from row 40 of its matrix: its rows [40, 64) are its tiles 0 and 1.
    assertEquals(
        box(0, 2, 0, 2), BLOCKS.memberScaleBox(Shape.of(64, 32), box(40, 64, 0, 32), 40, 24));
  }
}
