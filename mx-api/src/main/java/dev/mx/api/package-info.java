/**
 * Core value types of mx: element dtypes, shapes and half-open boxes. Everything here is immutable and
 * checks its invariants on construction.
 */
package dev.mx.api;
