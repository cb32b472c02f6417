/**
 * Element-type conversions between f64, f32, bf16, f16 and the OCP fp8 formats, bit-exact with
 * PyTorch's CPU {@code copy_} (round to nearest even), as tight loops over native memory.
 */
package dev.mx.refit.cast;
