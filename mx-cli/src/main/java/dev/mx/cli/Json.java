package dev.mx.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.PrintWriter;
import java.io.UncheckedIOException;

/** One JSON writer for every {@code --json} output. */
public final class Json {
  private static final ObjectMapper MAPPER =
      new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

  private Json() {}

  public static ObjectMapper mapper() {
    return MAPPER;
  }

  /** Prints {@code value} as one JSON document followed by a newline. */
  public static void print(PrintWriter out, Object value) {
    try {
      out.println(MAPPER.writeValueAsString(value));
      out.flush();
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new UncheckedIOException(e);
    }
  }
}
