/**
 * The backend kit: what the bundled transports share and a new backend builds on, kept out of the
 * SPI so that {@code mx-api} stays what an integrator implements or calls. {@link
 * dev.mx.transport.kit.AbstractTransport} is the skeleton (grouping by peer, validation before any
 * byte moves, post-all-then-await-all, counters, idempotent close); {@link
 * dev.mx.transport.kit.RegionBook} and {@link dev.mx.transport.kit.BookedRegistration} keep
 * registrations; {@link dev.mx.transport.kit.PeerMetadataCodec} and {@link
 * dev.mx.transport.kit.PeerTable} decode and index peers; {@link
 * dev.mx.transport.kit.NativeAvailability} is the availability holder of native backends; {@link
 * dev.mx.transport.kit.RoutingTransport} is {@code --transport auto}. CONTRIBUTING.md walks through
 * writing a backend from it.
 */
package dev.mx.transport.kit;
