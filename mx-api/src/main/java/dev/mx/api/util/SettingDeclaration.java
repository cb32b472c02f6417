package dev.mx.api.util;

import dev.mx.api.annotation.Internal;

/**
 * One setting declared once, for the generated settings table ({@code docs/SETTINGS.md}): its
 * system property, its environment variable, its type, its default as a user would write it, and
 * what it means. Modules declare their settings as enums implementing it.
 */
@Internal
public interface SettingDeclaration {

  /** The system property, {@code mx.<area>.<name>}; null when only the environment sets it. */
  String property();

  /** The environment variable, {@code MX_<AREA>_<NAME>}; null when only the property sets it. */
  String env();

  /** The accepted values, e.g. {@code bool}, {@code seconds > 0}, {@code fused | phased}. */
  String type();

  /** The default, as the string a user would set (or a word such as {@code auto}, explained). */
  String defaultValue();

  /** What it does, in a sentence or two. */
  String meaning();
}
