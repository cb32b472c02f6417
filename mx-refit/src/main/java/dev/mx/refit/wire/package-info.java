/**
 * Wire policies: how a refit's three groups of reads (exact, full pull, convert) go to the
 * transport — fused into one batch or phased into up to three.
 */
package dev.mx.refit.wire;
