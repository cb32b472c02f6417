package dev.mx.rl;

import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mx.rl.proto.RefitServiceGrpc;
import dev.mx.rl.proto.RefitWorkerServiceGrpc;
import io.grpc.MethodDescriptor;
import io.grpc.ServiceDescriptor;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The recorded lifecycle of {@code ../shared/golden/mx-rl/vectors} (29 calls of ModelExpress's
 * Python clients), read from beside the repository as CI lays it out.
 */
public final class GoldenVectors {
  /**
   * The golden folder: {@code <repository>/../shared/golden/mx-rl}; tests run in {@code mx-rl/}.
   */
  static final Path DIR =
      Path.of("..").toAbsolutePath().normalize().resolveSibling("shared/golden/mx-rl");

  static final ObjectMapper JSON = new ObjectMapper();

  /** One recorded call. */
  record Call(JsonNode entry, byte[] request, byte[] response) {
    int order() {
      return entry.get("order").asInt();
    }

    String rpc() {
      return entry.get("rpc").asText();
    }

    String status() {
      return entry.get("status").asText();
    }

    String errorMessage() {
      return entry.get("error_message").isNull() ? null : entry.get("error_message").asText();
    }

    /** {@code model_express.refit.RefitService/RegisterWorker}, without the leading slash. */
    String fullMethodName() {
      return entry.get("method_path").asText().substring(1);
    }

    @Override
    public String toString() {
      return String.format("%03d %s", order(), rpc());
    }
  }

  private GoldenVectors() {}

  static List<Call> calls() {
    Path vectors = DIR.resolve("vectors");
    assertTrue(
        Files.isDirectory(vectors),
        "the golden vectors are missing: expected " + vectors + " (shared/ beside the clone)");
    try {
      List<Call> calls = new ArrayList<>();
      for (JsonNode e : JSON.readTree(vectors.resolve("index.json").toFile())) {
        byte[] req = Files.readAllBytes(vectors.resolve(e.get("request_file").asText()));
        JsonNode respFile = e.get("response_file");
        byte[] resp =
            respFile == null || respFile.isNull()
                ? null
                : Files.readAllBytes(vectors.resolve(respFile.asText()));
        calls.add(new Call(e, req, resp));
      }
      return calls;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Every method of both services by full name, with our generated marshallers. */
  static Map<String, MethodDescriptor<?, ?>> methods() {
    Map<String, MethodDescriptor<?, ?>> out = new HashMap<>();
    for (ServiceDescriptor s :
        List.of(
            RefitServiceGrpc.getServiceDescriptor(),
            RefitWorkerServiceGrpc.getServiceDescriptor())) {
      for (MethodDescriptor<?, ?> m : s.getMethods()) {
        out.put(m.getFullMethodName(), m);
      }
    }
    return out;
  }

  public static byte[] manifest(String name) {
    try {
      return Files.readAllBytes(DIR.resolve("manifests").resolve(name));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
