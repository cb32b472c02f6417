package dev.mx.metadata.file;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import dev.mx.api.annotation.Stable;
import dev.mx.api.metadata.SourceRecord;
import dev.mx.api.metadata.SourceStatus;
import dev.mx.api.metadata.WeightVersionStore;
import dev.mx.metadata.AbstractMetadataStore;
import dev.mx.metadata.MetadataStoreException;
import dev.mx.metadata.ShardTableCodec;
import dev.mx.metadata.StoreNames;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A store in a directory, for many processes on one host and no server. Each identity has a
 * subdirectory; each worker two files in it: {@code <worker>.blob} (the shard table, written on
 * publish) and {@code <worker>.state} (rank, status and last heartbeat in epoch milliseconds,
 * rewritten by every heartbeat). Every write goes to a temporary file that is then renamed over the
 * old one, so readers in other processes see the old file or the new one, never a torn one; the
 * blob is written before the state, so a state is never newer than its blob. Liveness is the
 * heartbeat time in the state file, compared with this host's clock.
 */
@Stable
public final class FileMetadataStore extends AbstractMetadataStore {
  private static final Logger LOG = LoggerFactory.getLogger(FileMetadataStore.class);
  private static final String STATE = ".state";
  private static final String BLOB = ".blob";
  private static final int MAX_ENCODED_NAME = 200;
  private static final JsonFactory JSON = new JsonFactory();

  private final Path root;
  private final LongSupplier clockMillis;
  private final long maxBlobBytes;
  private final FileWeightVersions versions;

  /** A store rooted at {@code root} (created when missing), timed by the wall clock. */
  public FileMetadataStore(Path root) {
    this(root, System::currentTimeMillis);
  }

  /** As above with an explicit clock (epoch milliseconds). */
  public FileMetadataStore(Path root, LongSupplier clockMillis) {
    super("file:" + root);
    this.root = root;
    this.clockMillis = clockMillis;
    this.maxBlobBytes = ShardTableCodec.Limits.DEFAULT.maxBytes();
    this.versions = new FileWeightVersions(root, uri(), clockMillis, this::ensureOpen);
    try {
      OwnerOnly.createDirectories(root);
    } catch (IOException e) {
      throw new MetadataStoreException(uri(), "cannot create the store directory", e);
    }
    try {
      OwnerOnly.requireOwnedAndPrivate(root);
    } catch (IOException e) {
      throw new MetadataStoreException(uri(), "refused: " + e.getMessage(), e);
    }
  }

  @Override
  public WeightVersionStore versions() {
    return versions;
  }

  /** The directory this store lives in. */
  public Path root() {
    return root;
  }

  @Override
  public void publish(SourceRecord record) {
    ensureOpen();
    Path dir = identityDir(record.identity());
    String worker = fileName("worker id", record.workerId());
    try {
      OwnerOnly.createDirectories(dir);
      writeAtomically(dir, worker + BLOB, record.blob());
      writeAtomically(
          dir,
          worker + STATE,
          encodeState(
              new SourceRecord(
                  record.identity(),
                  record.workerId(),
                  record.rank(),
                  new byte[0],
                  record.status(),
                  0,
                  record.progress(),
                  record.phase())));
    } catch (IOException e) {
      throw new MetadataStoreException(
          uri(), "cannot publish worker '" + record.workerId() + "' in " + dir, e);
    }
  }

  @Override
  public void heartbeat(String identity, String workerId, SourceStatus status) {
    beat(identity, workerId, status, null, null);
  }

  @Override
  public void heartbeat(
      String identity, String workerId, SourceStatus status, long progress, String phase) {
    beat(identity, workerId, status, progress, phase);
  }

  /** Rewrites a state file; a null progress keeps the file's progress and phase. */
  private void beat(
      String identity, String workerId, SourceStatus status, Long progress, String phase) {
    ensureOpen();
    Path dir = identityDir(identity);
    String worker = fileName("worker id", workerId);
    Path statePath = dir.resolve(worker + STATE);
    try {
      SourceRecord state = readState(statePath);
      writeAtomically(
          dir,
          worker + STATE,
          encodeState(
              new SourceRecord(
                  identity,
                  workerId,
                  state.rank(),
                  new byte[0],
                  status,
                  clockMillis.getAsLong(),
                  progress == null ? state.progress() : progress,
                  progress == null ? state.phase() : phase)));
    } catch (NoSuchFileException e) {
      throw unknownSource(identity, workerId);
    } catch (IOException e) {
      throw new MetadataStoreException(
          uri(), "cannot heartbeat worker '" + workerId + "' in " + statePath, e);
    }
  }

  @Override
  public List<SourceRecord> listReady(String identity, Duration freshness, boolean withBlobs) {
    ensureOpen();
    requireFreshness(freshness);
    Path dir = identityDir(identity);
    if (!Files.isDirectory(dir)) {
      return List.of();
    }
    long now = clockMillis.getAsLong();
    List<SourceRecord> live = new ArrayList<>();
    try (DirectoryStream<Path> states = Files.newDirectoryStream(dir, "[!.]*" + STATE)) {
      for (Path statePath : states) {
        try {
          SourceRecord r = readState(statePath);
          if (isFreshReady(r, now, freshness)) {
            live.add(r);
          }
        } catch (NoSuchFileException removedMeanwhile) {
          // Removed between listing and reading: not a source any more.
        } catch (IOException | MetadataStoreException e) {
          // One damaged file must not hide every other publisher.
          LOG.warn("{}: skipping unreadable state file {}: {}", uri(), statePath, e.toString());
        }
      }
    } catch (IOException e) {
      throw new MetadataStoreException(uri(), "cannot list " + dir, e);
    }
    live.sort(NEWEST_FIRST);
    if (!withBlobs) {
      return List.copyOf(live);
    }
    List<SourceRecord> out = new ArrayList<>(live.size());
    for (SourceRecord r : live) {
      try {
        out.add(withBlob(r, readBlob(dir.resolve(fileName("worker id", r.workerId()) + BLOB))));
      } catch (NoSuchFileException removedMeanwhile) {
        // Removed after its state was read.
      } catch (IOException e) {
        throw new MetadataStoreException(
            uri(), "cannot read the table of worker '" + r.workerId() + "'", e);
      }
    }
    return List.copyOf(out);
  }

  @Override
  public Optional<SourceRecord> get(String identity, String workerId) {
    ensureOpen();
    Path dir = identityDir(identity);
    String worker = fileName("worker id", workerId);
    try {
      SourceRecord state = readState(dir.resolve(worker + STATE));
      return Optional.of(withBlob(state, readBlob(dir.resolve(worker + BLOB))));
    } catch (NoSuchFileException e) {
      return Optional.empty();
    } catch (IOException e) {
      throw new MetadataStoreException(
          uri(), "cannot read worker '" + workerId + "' from " + dir, e);
    }
  }

  @Override
  public void remove(String identity, String workerId) {
    ensureOpen();
    Path dir = identityDir(identity);
    String worker = fileName("worker id", workerId);
    try {
      // State first: without it the worker is not listed, whatever happens to the blob.
      Files.deleteIfExists(dir.resolve(worker + STATE));
      Files.deleteIfExists(dir.resolve(worker + BLOB));
    } catch (IOException e) {
      throw new MetadataStoreException(
          uri(), "cannot remove worker '" + workerId + "' from " + dir, e);
    }
  }

  private Path identityDir(String identity) {
    return root.resolve(fileName("identity", identity));
  }

  private String fileName(String what, String name) {
    requireName(what, name);
    String encoded = StoreNames.encode(name);
    if (encoded.length() > MAX_ENCODED_NAME) {
      throw new IllegalArgumentException(
          uri()
              + ": "
              + what
              + " '"
              + name
              + "' is too long for a file name ("
              + encoded.length()
              + " characters encoded, at most "
              + MAX_ENCODED_NAME
              + ")");
    }
    return encoded;
  }

  /** Writes a sibling temporary file, then renames it over {@code name} in one step. */
  static void writeAtomically(Path dir, String name, byte[] bytes) throws IOException {
    Path tmp = dir.resolve("." + name + "." + UUID.randomUUID() + ".tmp");
    try {
      try (FileChannel out =
          OwnerOnly.open(tmp, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
        ByteBuffer buffer = ByteBuffer.wrap(bytes);
        while (buffer.hasRemaining()) {
          out.write(buffer);
        }
      }
      try {
        Files.move(tmp, dir.resolve(name), StandardCopyOption.ATOMIC_MOVE);
      } catch (AtomicMoveNotSupportedException e) {
        throw new IOException(
            "the file system of "
                + dir
                + " cannot rename atomically; the file: store needs"
                + " a local POSIX file system",
            e);
      }
    } finally {
      Files.deleteIfExists(tmp);
    }
  }

  private byte[] readBlob(Path path) throws IOException {
    long size = Files.size(path);
    if (size > maxBlobBytes) {
      throw new MetadataStoreException(
          uri(),
          path
              + " holds "
              + size
              + " bytes, more than the "
              + maxBlobBytes
              + " a shard table may have");
    }
    return Files.readAllBytes(path);
  }

  /** A state file: the record without its blob; progress and phase only when it reports them. */
  private static byte[] encodeState(SourceRecord r) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream(128);
    try (JsonGenerator g = JSON.createGenerator(out)) {
      g.writeStartObject();
      g.writeStringField("identity", r.identity());
      g.writeStringField("worker_id", r.workerId());
      g.writeNumberField("rank", r.rank());
      g.writeStringField("status", r.status().name());
      g.writeNumberField("updated_at", r.updatedAtMillis());
      if (r.reportsProgress()) {
        g.writeNumberField("progress", r.progress());
        g.writeStringField("phase", r.phase());
      }
      g.writeEndObject();
    }
    return out.toByteArray();
  }

  /** A record without its blob, from a state file. */
  private SourceRecord readState(Path path) throws IOException {
    byte[] bytes = Files.readAllBytes(path);
    String identity = null;
    String workerId = null;
    Integer rank = null;
    SourceStatus status = null;
    Long updatedAt = null;
    // Absent in state files written before progress existed: such a record reports none.
    long progress = SourceRecord.NO_PROGRESS;
    String phase = "";
    try (JsonParser p = JSON.createParser(bytes)) {
      if (p.nextToken() != JsonToken.START_OBJECT) {
        throw corruptState(path, "not a JSON object");
      }
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String key = p.currentName();
        JsonToken value = p.nextToken();
        switch (key) {
          case "identity" -> identity = value == JsonToken.VALUE_STRING ? p.getText() : null;
          case "worker_id" -> workerId = value == JsonToken.VALUE_STRING ? p.getText() : null;
          case "rank" -> rank = value == JsonToken.VALUE_NUMBER_INT ? p.getIntValue() : null;
          case "status" ->
              status = value == JsonToken.VALUE_STRING ? parseStatus(path, p.getText()) : null;
          case "updated_at" ->
              updatedAt = value == JsonToken.VALUE_NUMBER_INT ? p.getLongValue() : null;
          case "progress" ->
              progress =
                  value == JsonToken.VALUE_NUMBER_INT ? p.getLongValue() : SourceRecord.NO_PROGRESS;
          case "phase" -> phase = value == JsonToken.VALUE_STRING ? p.getText() : "";
          default -> p.skipChildren();
        }
      }
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw corruptState(path, "not valid JSON: " + e.getOriginalMessage());
    }
    if (identity == null
        || workerId == null
        || rank == null
        || status == null
        || updatedAt == null) {
      throw corruptState(path, "lacks one of identity, worker_id, rank, status, updated_at");
    }
    return new SourceRecord(
        identity, workerId, rank, new byte[0], status, updatedAt, progress, phase);
  }

  private SourceStatus parseStatus(Path path, String s) {
    try {
      return SourceStatus.valueOf(s);
    } catch (IllegalArgumentException e) {
      throw corruptState(path, "unknown status '" + s + "'");
    }
  }

  private MetadataStoreException corruptState(Path path, String problem) {
    return new MetadataStoreException(uri(), "state file " + path + " is damaged: " + problem);
  }
}
