package dev.mx.transport.kit;

import dev.mx.api.annotation.Internal;
import java.util.List;
import java.util.function.BiFunction;
import java.util.function.Function;

/**
 * How a backend reads the metadata a peer published: decode the blob, then index the regions it
 * lists (a region's id in the {@link RegionTable} is its position in the list). {@link
 * AbstractTransport#decodePeer} runs both steps and names the peer in what fails.
 *
 * @param <M> the backend's decoded metadata
 */
@Internal
public interface PeerMetadataCodec<M> {

  /**
   * Decodes the backend's blob of peer {@code session}.
   *
   * @throws IllegalArgumentException saying what is wrong, when the blob is not this backend's
   *     metadata or is malformed (a {@link java.nio.BufferUnderflowException} reads as truncated)
   *     (a {@link dev.mx.api.error.TransportException} passes through as it is)
   */
  M decode(String session, byte[] blob);

  /**
   * The regions {@code metadata} publishes, in the order their ids number them; none for a backend
   * whose native library checks reads against the peer's registrations itself.
   */
  List<? extends PublishedRegion> regions(M metadata);

  /**
   * The codec of {@code decode} (a backend's own decoder, e.g. {@code ShmPeerMetadata::decode}) and
   * {@code regions} (what the decoded metadata publishes).
   */
  static <M> PeerMetadataCodec<M> of(
      BiFunction<String, byte[], M> decode, Function<M, List<? extends PublishedRegion>> regions) {
    return new PeerMetadataCodec<>() {
      @Override
      public M decode(String session, byte[] blob) {
        return decode.apply(session, blob);
      }

      @Override
      public List<? extends PublishedRegion> regions(M metadata) {
        return regions.apply(metadata);
      }
    };
  }

  /** A region a peer published: where it starts in the peer's address space, and its length. */
  interface PublishedRegion {
    long base();

    long length();
  }

  /** A peer's decoded metadata and the table over the regions it published. */
  record Decoded<M>(M metadata, RegionTable regions) {}
}
