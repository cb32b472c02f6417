package dev.mx.api.util;

import dev.mx.api.annotation.Internal;

/**
 * One setting declared once, for the generated settings table ({@code docs/SETTINGS.md}): its
 * system property, its environment variable, its type, its default as a user would write it, and
 * what it means. Modules declare their settings as enums implementing it over a {@link #declared()}
 * value.
 */
@Internal
public interface SettingDeclaration {

  /** The declaration's values. */
  Declared declared();

  /** The system property, {@code mx.<area>.<name>}; null when only the environment sets it. */
  default String property() {
    return declared().property();
  }

  /** The environment variable, {@code MX_<AREA>_<NAME>}; null when only the property sets it. */
  default String env() {
    return declared().env();
  }

  /** The accepted values, e.g. {@code bool}, {@code seconds > 0}, {@code fused | phased}. */
  default String type() {
    return declared().type();
  }

  /** The default, as the string a user would set (or a word such as {@code auto}, explained). */
  default String defaultValue() {
    return declared().defaultValue();
  }

  /** What it does, in a sentence or two. */
  default String meaning() {
    return declared().meaning();
  }

  /** The values of one declaration. */
  record Declared(String property, String env, String type, String defaultValue, String meaning) {}
}
