/**
 * Receiver-side SPIs: where target geometry comes from ({@link dev.mx.api.refit.GeometrySource}),
 * how the reads go on the wire ({@link dev.mx.api.refit.WirePolicy}) and how received weights reach
 * the engine ({@link dev.mx.api.refit.Installer}, or in place: {@link
 * dev.mx.api.refit.InPlaceTarget}).
 */
package dev.mx.api.refit;
