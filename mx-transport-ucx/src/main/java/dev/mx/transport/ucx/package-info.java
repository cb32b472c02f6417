/**
 * The {@code ucx} transport: one-sided GETs over UCX through jucx, between processes and hosts.
 * {@link dev.mx.transport.ucx.Ucx} says whether UCX is usable here; {@link
 * dev.mx.transport.ucx.UcxTransport} is the endpoint.
 */
package dev.mx.transport.ucx;
