/** The ucx transport: one-sided GETs over UCX through jucx, across processes and hosts. */
package dev.mx.transport.ucx;
