package dev.mx.refit.checkpoint;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.mx.api.digest.DigestProvider;
import dev.mx.api.digest.TileDigests;
import java.io.IOException;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The digests of one checkpoint file, kept beside it as {@code FILE.mx-digests.json}: the file's
 * size and modification time, the digest's name and tile size they were computed with, and per
 * tensor its shard digest and tile digests. A cache whose file, digest or tile size differs, or
 * that does not list every tensor with the tile count its size needs, is ignored and rewritten; one
 * that cannot be written only costs digesting again on the next open.
 */
final class DigestCache {
  private static final Logger LOG = LoggerFactory.getLogger(DigestCache.class);
  private static final ObjectMapper JSON = new ObjectMapper();

  /** The schema string of the cache file. */
  static final String SCHEMA = "mx.checkpoint_digests.v1";

  /** The suffix a cache file adds to its checkpoint file's name. */
  static final String SUFFIX = ".mx-digests.json";

  /** One tensor's digests; {@code tiles} null when it is a single tile. */
  record Digests(String digest, TileDigests tiles) {}

  private final Path file;
  private final CheckpointSource.FileState state;
  private final String digestName;
  private final long tileBytes;

  DigestCache(Path file, CheckpointSource.FileState state, String digestName, long tileBytes) {
    this.file = file;
    this.state = state;
    this.digestName = digestName;
    this.tileBytes = tileBytes;
  }

  /** The cache file of checkpoint file {@code file}. */
  static Path cacheOf(Path file) {
    return file.resolveSibling(file.getFileName() + SUFFIX);
  }

  /** The cached digests of {@code tensors}, or null when there is no valid cache for them. */
  Map<String, Digests> load(List<CheckpointSource.Tensor> tensors) {
    Path cache = cacheOf(file);
    if (!Files.isRegularFile(cache)) {
      return null;
    }
    String stale = null;
    try {
      JsonNode root = JSON.readTree(cache.toFile());
      if (!SCHEMA.equals(root.path("schema").asText())) {
        stale = "schema '" + root.path("schema").asText() + "'";
      } else if (root.path("size").asLong(-1) != state.size()
          || root.path("modified_ns").asLong(-1) != state.modifiedNanos()) {
        stale = "the file changed since it was digested";
      } else if (!digestName.equals(root.path("digest").asText())
          || root.path("tile_bytes").asLong(-1) != tileBytes) {
        stale =
            "digested with "
                + root.path("digest").asText()
                + " in tiles of "
                + root.path("tile_bytes").asLong(-1)
                + " bytes, not "
                + digestName
                + " in tiles of "
                + tileBytes;
      } else {
        Map<String, Digests> out = new HashMap<>();
        JsonNode listed = root.path("tensors");
        for (CheckpointSource.Tensor t : tensors) {
          Digests d = parse(listed.path(t.name()), t.data().byteSize());
          if (d == null) {
            stale = "tensor '" + t.name() + "' is not listed whole";
            break;
          }
          out.put(t.name(), d);
        }
        if (stale == null) {
          return out;
        }
      }
    } catch (IOException | RuntimeException e) {
      stale = "unreadable (" + e.getMessage() + ")";
    }
    LOG.info("digest cache {} is not used: {}; digesting the file again", cache, stale);
    return null;
  }

  private Digests parse(JsonNode n, long size) {
    String digest = n.path("digest").asText(null);
    if (digest == null || digest.isEmpty()) {
      return null;
    }
    TileDigests tiles = null;
    if (tiled(size, tileBytes)) {
      JsonNode list = n.path("tile_digests");
      if (!list.isArray() || list.size() != TileDigests.count(size, tileBytes)) {
        return null;
      }
      List<String> ds = new ArrayList<>(list.size());
      list.forEach(x -> ds.add(x.asText()));
      tiles = new TileDigests(tileBytes, ds);
    }
    return new Digests(digest, tiles);
  }

  /** Whether a shard of {@code size} bytes gets tile digests (as a publisher gives them). */
  static boolean tiled(long size, long tileBytes) {
    return tileBytes > 0 && size > tileBytes;
  }

  /**
   * Writes {@code digests} as this file's cache (to a temporary sibling, then renamed); a failure
   * is logged, not thrown.
   */
  void store(Map<String, Digests> digests) {
    Path cache = cacheOf(file);
    ObjectNode root = JSON.createObjectNode();
    root.put("schema", SCHEMA);
    root.put("file", file.getFileName().toString());
    root.put("size", state.size());
    root.put("modified_ns", state.modifiedNanos());
    root.put("digest", digestName);
    root.put("tile_bytes", tileBytes);
    ObjectNode listed = root.putObject("tensors");
    digests.entrySet().stream()
        .sorted(Map.Entry.comparingByKey())
        .forEach(
            e -> {
              ObjectNode t = listed.putObject(e.getKey());
              t.put("digest", e.getValue().digest());
              if (e.getValue().tiles() != null) {
                ArrayNode a = t.putArray("tile_digests");
                e.getValue().tiles().digests().forEach(a::add);
              }
            });
    Path tmp = cache.resolveSibling(cache.getFileName() + ".tmp");
    try {
      Files.write(tmp, JSON.writerWithDefaultPrettyPrinter().writeValueAsBytes(root));
      try {
        Files.move(tmp, cache, StandardCopyOption.ATOMIC_MOVE);
      } catch (AtomicMoveNotSupportedException e) {
        Files.move(tmp, cache, StandardCopyOption.REPLACE_EXISTING);
      }
    } catch (IOException e) {
      LOG.warn(
          "cannot cache the digests of {} in {} ({}); they are computed again on the next open",
          file,
          cache,
          e.toString());
      try {
        Files.deleteIfExists(tmp);
      } catch (IOException ignored) {
        // Nothing was cached; the temporary file is all that is left behind.
      }
    }
  }

  /**
   * Digests every tensor of {@code tensors} (its shard digest, and tile digests when it spans more
   * than one tile), largest first on one thread per processor.
   */
  static Map<String, Digests> compute(
      List<CheckpointSource.Tensor> tensors, DigestProvider digest, long tileBytes) {
    List<CheckpointSource.Tensor> order = new ArrayList<>(tensors);
    order.sort(
        Comparator.comparingLong((CheckpointSource.Tensor t) -> t.data().byteSize()).reversed());
    int threads = Math.max(1, Math.min(order.size(), Runtime.getRuntime().availableProcessors()));
    Map<String, Digests> out = new HashMap<>();
    try (ExecutorService pool = Executors.newFixedThreadPool(threads)) {
      List<Future<Digests>> done = new ArrayList<>();
      for (CheckpointSource.Tensor t : order) {
        done.add(
            pool.submit(
                () ->
                    new Digests(
                        digest.digest(t.data()),
                        tiled(t.data().byteSize(), tileBytes)
                            ? TileDigests.of(digest, t.data(), tileBytes)
                            : null)));
      }
      for (int i = 0; i < order.size(); i++) {
        out.put(order.get(i).name(), done.get(i).get());
      }
    } catch (ExecutionException e) {
      if (e.getCause() instanceof Error err) {
        throw err;
      }
      throw e.getCause() instanceof RuntimeException r
          ? r
          : new IllegalStateException(e.getCause());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while digesting a checkpoint", e);
    }
    return out;
  }
}
