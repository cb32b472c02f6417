package dev.mx.examples;

import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.transport.TransportProvider;
import dev.mx.metadata.MetadataStores;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * Trainers (TP=2) and receivers (TP=4, fused QKV) in one JVM over the {@code mem} transport and a
 * {@code memory:} metadata store. {@code main} prints what each inference rank installed.
 */
public final class InProcessExample {
  private InProcessExample() {}

  /** Runs the example; element {@code r} is inference rank {@code r}'s installed parameters. */
  public static List<Map<String, float[]>> run() throws Exception {
    TransportProvider mem = TransportProvider.registry().select("mem");
    String identity = "example-" + UUID.randomUUID();
    try (MetadataStore store = MetadataStores.open("memory:" + identity);
        Trainers trainers = new Trainers(mem, store, identity)) {
      List<Map<String, float[]>> ranks = new ArrayList<>();
      for (int r = 0; r < ExampleModel.INFERENCE_TP; r++) {
        ranks.add(Receivers.refit(mem, store, identity, r));
      }
      return ranks;
    }
  }

  public static void main(String[] args) throws Exception {
    List<Map<String, float[]>> ranks = run();
    for (int r = 0; r < ranks.size(); r++) {
      for (Map.Entry<String, float[]> p : ranks.get(r).entrySet()) {
        System.out.println(
            "inference rank "
                + r
                + ": "
                + p.getKey()
                + " = "
                + p.getValue().length
                + " floats, first "
                + p.getValue()[0]);
      }
    }
  }
}
