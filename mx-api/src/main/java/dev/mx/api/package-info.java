/**
 * Core value types of mx: element dtypes, shapes and half-open boxes. Everything here is immutable
 * and checks its invariants on construction. {@link dev.mx.api.HalfFloats} holds the one bf16/f16
 * rounding every module shares (pure static bit functions).
 */
package dev.mx.api;
