package dev.mx.layout.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.layout.LayoutException;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Sizes beyond any real model are errors naming the key, not an OutOfMemoryError later. */
class ModelConfigLimitsTest {

  private static final String BASE =
      """
      "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2,
      "vocab_size": 100, "intermediate_size": 32""";

  @ParameterizedTest
  @CsvSource({
    "vocab_size,100,2147483647,16777216",
    "hidden_size,64,2147483584,131072",
    "intermediate_size,32,2000000000,1048576",
    "num_hidden_layers,2,1000000,4096",
    // M17: beyond an int ("must be an integer" before) is the same named limit.
    "vocab_size,100,1099511627776,16777216",
    "num_hidden_layers,2,99999999999999999999999999,4096"
  })
  void aHugeSizeIsANamedBoundedError(String key, String was, String huge, String limit) {
    String json =
        "{\"architectures\": [\"LlamaForCausalLM\"], "
            + BASE.replace("\"" + key + "\": " + was, "\"" + key + "\": " + huge)
            + "}";
    LayoutException e =
        assertThrows(LayoutException.class, () -> ModelConfigs.parse(json, "/m/config.json", "m"));
    assertEquals(
        "/m/config.json: key '" + key + "': " + huge + " exceeds the limit of " + limit,
        e.getMessage());
  }

  @ParameterizedTest
  @CsvSource({"vocab_size,100,16777216"})
  void theLimitItselfIsAccepted(String key, String was, String limit) {
    String json =
        "{\"architectures\": [\"LlamaForCausalLM\"], "
            + BASE.replace("\"" + key + "\": " + was, "\"" + key + "\": " + limit)
            + "}";
    assertTrue(ModelConfigs.parse(json, "/m/config.json", "m").tensors().size() > 0);
  }
}
