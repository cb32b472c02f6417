package dev.mx.refit.publish;

import dev.mx.api.annotation.Stable;
import dev.mx.api.util.SettingDeclaration;

/**
 * The publisher's own settings, declared once ({@code docs/SETTINGS.md} is generated from them);
 * its heartbeat is the source liveness of {@link dev.mx.metadata.MetadataSetting}.
 */
@Stable
public enum PublisherSetting implements SettingDeclaration {
  DIGEST(
      "mx.publish.digest",
      "MX_RESHARD_PUBLISH_DIGEST",
      "bool",
      "true",
      "Compute and publish each shard's digest, so receivers can verify what they install."),
  TILE_BYTES(
      "mx.publish.tile-bytes",
      "MX_RESHARD_PUBLISH_TILE_BYTES",
      "int >= 0",
      "65536",
      "The tile of the per-shard tile digests: a receiver reading a shard in part pulls at most two"
          + " tiles beyond its bytes to verify them. 0 publishes no tile digests."),
  COLUMN_BLOCKS(
      "mx.publish.column-blocks",
      "MX_RESHARD_PUBLISH_COLUMN_BLOCKS",
      "int >= 1",
      "4",
      "Column blocks per row of the tile digests of a shard split along its last dimension (a"
          + " row-parallel weight): a receiver reading 1/2 or 1/4 of each row (a tensor parallelism"
          + " 2 or 4 times the publisher's) then holds whole tiles and verifies them where they"
          + " land instead of pulling the shard whole. 1 publishes byte tiles for every shard.");

  private final Declared declared;

  PublisherSetting(String property, String env, String type, String defaultValue, String meaning) {
    this.declared = new Declared(property, env, type, defaultValue, meaning);
  }

  @Override
  public Declared declared() {
    return declared;
  }
}
