/**
 * The synthetic weight generator of ARCHITECTURE §5.4 (a value anyone can recompute for every
 * element of every global tensor at every step) and the float conversions it stores with (bf16 and
 * f16, round to nearest even).
 */
package dev.mx.layout.gen;
