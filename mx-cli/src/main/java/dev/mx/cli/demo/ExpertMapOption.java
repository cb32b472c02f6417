package dev.mx.cli.demo;

import dev.mx.layout.LayoutException;
import dev.mx.layout.model.ModelArchitecture;
import dev.mx.layout.vllm.ExpertPlacement;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The value of {@code --expert-map}: {@code redundant=N} ({@link ExpertPlacement#redundant}) or a
 * JSON file in {@link ExpertPlacement}'s form.
 */
final class ExpertMapOption {
  static final String NAME = "--expert-map";
  private static final String REDUNDANT = "redundant=";

  private ExpertMapOption() {}

  /**
   * The placement {@code value} names for {@code model}.
   *
   * @throws LayoutException saying what is wrong (a layer and slot, an unreadable file, a bad N);
   *     callers prefix the option and value
   */
  static ExpertPlacement resolve(String value, ModelArchitecture model) {
    if (!model.isMoe()) {
      throw new LayoutException("model " + model.modelName() + " has no mixture-of-experts layer");
    }
    if (value.startsWith(REDUNDANT)) {
      String n = value.substring(REDUNDANT.length());
      int count;
      try {
        count = Integer.parseInt(n);
      } catch (NumberFormatException e) {
        throw new LayoutException("redundant=N needs an integer N, got '" + n + "'");
      }
      return ExpertPlacement.redundant(model, count);
    }
    String json;
    try {
      json = Files.readString(Path.of(value), StandardCharsets.UTF_8);
    } catch (IOException | RuntimeException e) {
      throw new LayoutException(
          "cannot read the expert map file (expected a file or redundant=N): " + e);
    }
    return ExpertPlacement.parse(json, model);
  }
}
