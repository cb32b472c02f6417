/**
 * Digest verification before install (ModelExpress; ARCHITECTURE §7.2): which published shards a
 * refit received whole, where their bytes landed, and the comparison of recomputed digests with the
 * publishers' digests.
 */
package dev.mx.refit.verify;
