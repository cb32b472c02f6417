package dev.mx.plan;

import dev.mx.api.util.SettingDeclaration;

/**
 * The planner's settings, declared once ({@code docs/SETTINGS.md} is generated from them;
 * ModelExpress's names where ModelExpress has the setting, ARCHITECTURE §7.3).
 */
public enum PlanSetting implements SettingDeclaration {
  MAX_SEGMENTS_PER_COPY(
      "mx.reshard.max-segments-per-copy",
      "MX_RESHARD_MAX_SEGMENTS_PER_COPY",
      "int >= 1",
      "64",
      "Bounding threshold (ModelExpress bounding): a copy needing more descriptors than this pulls"
          + " its source whole."),
  MAX_EXTRA_WIRE_RATIO(
      "mx.plan.max-extra-wire-ratio",
      "MX_PLAN_MAX_EXTRA_WIRE_RATIO",
      "number >= 0",
      "7",
      "Shard bounding: an option reading more than (1 + ratio) times a source's exact bytes is not"
          + " taken (7: at most 8 times, enough for TP=1 to TP=8)."),
  MAX_DESCRIPTORS(
      "mx.plan.max-descriptors",
      "MX_PLAN_MAX_DESCRIPTORS",
      "int",
      "67108864",
      "A plan needing more descriptors than this (2^26) is refused before any is built.");

  private final Declared declared;

  PlanSetting(String property, String env, String type, String defaultValue, String meaning) {
    this.declared = new Declared(property, env, type, defaultValue, meaning);
  }

  @Override
  public Declared declared() {
    return declared;
  }
}
