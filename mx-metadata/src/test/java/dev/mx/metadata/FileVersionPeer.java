package dev.mx.metadata;

import dev.mx.api.metadata.WeightVersion;
import dev.mx.api.metadata.WeightVersionState;
import dev.mx.api.metadata.WeightVersionStore;
import dev.mx.metadata.file.FileMetadataStore;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The child JVM of {@link FileWeightVersionStoreTest}: waits for the start file, publishes its
 * slots of one version and prints how many of its publications saw the version turn READY.
 * Arguments: store dir, model, version id, step, comma-separated slots, start file.
 */
public final class FileVersionPeer {
  private FileVersionPeer() {}

  public static void main(String[] args) throws Exception {
    try (FileMetadataStore store = new FileMetadataStore(Path.of(args[0]))) {
      WeightVersionStore versions = store.versions();
      String model = args[1];
      String id = args[2];
      long step = Long.parseLong(args[3]);
      Path go = Path.of(args[5]);
      System.out.print("READY\n");
      System.out.flush();
      while (!Files.exists(go)) {
        Thread.sleep(2);
      }
      int ready = 0;
      for (String s : args[4].split(",")) {
        WeightVersion v =
            versions.publishSlot(model, AbstractWeightVersionStoreTest.slot(id, s, "w" + s, step));
        ready += v.state() == WeightVersionState.READY ? 1 : 0;
      }
      System.out.println("READY_ANSWERS " + ready);
    }
  }
}
