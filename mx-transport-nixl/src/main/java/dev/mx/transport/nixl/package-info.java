/**
 * The {@code nixl} transport: one-sided reads through NVIDIA NIXL's C library ({@code
 * libnixl_capi.so}), called with Java's foreign-function API; its metadata blob is NIXL's own agent
 * metadata, so mx and ModelExpress endpoints can read from each other.
 */
package dev.mx.transport.nixl;
