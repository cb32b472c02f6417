/**
 * A zero-storage strided-view algebra: replays recorded PyTorch view ops on a row-major root and
 * reports the resulting offset, shape and strides in elements, and whether any op would have
 * materialized a copy.
 */
package dev.mx.plan.view;
