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
          + " tiles beyond its bytes to verify them. 0 publishes no tile digests.");

  private final Declared declared;

  PublisherSetting(String property, String env, String type, String defaultValue, String meaning) {
    this.declared = new Declared(property, env, type, defaultValue, meaning);
  }

  @Override
  public Declared declared() {
    return declared;
  }
}
