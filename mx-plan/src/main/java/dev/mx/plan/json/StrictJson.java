package dev.mx.plan.json;

import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonStreamContext;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;

/**
 * Reads exactly one JSON document and refuses what a lenient reader would let through silently: a
 * key given twice in one object (the last one would win) and anything after the document. Errors
 * are {@link IllegalArgumentException}s naming the JSON path (e.g. {@code sources.w.dtype}) or the
 * line and column.
 */
public final class StrictJson {
  private static final ObjectMapper MAPPER = new ObjectMapper();

  private StrictJson() {}

  /**
   * The document {@code in} holds.
   *
   * @throws IllegalArgumentException when it is empty, not valid JSON, repeats a key or has content
   *     after the document
   * @throws IOException when {@code in} cannot be read
   */
  public static JsonNode read(InputStream in) throws IOException {
    try (JsonParser parser = MAPPER.getFactory().createParser(in)) {
      parser.enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION.mappedFeature());
      JsonNode root;
      try {
        root = MAPPER.readTree(parser);
      } catch (JsonProcessingException e) {
        throw invalid(e, parser);
      }
      if (root == null || root.isMissingNode()) {
        throw new IllegalArgumentException("empty input, expected a JSON object");
      }
      try {
        if (parser.nextToken() != null) {
          throw new IllegalArgumentException(
              "unexpected content after the JSON document" + at(parser.currentTokenLocation()));
        }
      } catch (JsonProcessingException e) {
        throw new IllegalArgumentException(
            "unexpected content after the JSON document" + at(e.getLocation()), e);
      }
      return root;
    }
  }

  private static IllegalArgumentException invalid(JsonProcessingException e, JsonParser parser) {
    JsonStreamContext context = parser.getParsingContext();
    if (e.getOriginalMessage() != null
        && e.getOriginalMessage().startsWith("Duplicate field")
        && context != null) {
      return new IllegalArgumentException(
          path(context) + ": duplicate key" + at(e.getLocation()), e);
    }
    // Limits (nesting depth, number and string lengths) are reported without a location.
    return new IllegalArgumentException(
        "not valid JSON: " + e.getOriginalMessage() + at(e.getLocation()), e);
  }

  /** The dotted path of the value {@code context} is at, e.g. {@code copies[1].src}. */
  static String path(JsonStreamContext context) {
    List<String> parts = new ArrayList<>();
    for (JsonStreamContext c = context; c != null && !c.inRoot(); c = c.getParent()) {
      if (c.inArray()) {
        parts.addFirst("[" + c.getCurrentIndex() + "]");
      } else if (c.getCurrentName() != null) {
        parts.addFirst(
            (c.getParent() != null && c.getParent().inRoot() ? "" : ".") + c.getCurrentName());
      }
    }
    return parts.isEmpty() ? "$" : String.join("", parts);
  }

  private static String at(JsonLocation location) {
    return location == null || location.getLineNr() < 1
        ? ""
        : " (line " + location.getLineNr() + ", column " + location.getColumnNr() + ")";
  }
}
