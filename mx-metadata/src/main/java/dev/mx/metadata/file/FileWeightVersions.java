package dev.mx.metadata.file;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import dev.mx.api.metadata.SlotStatus;
import dev.mx.api.metadata.WeightVersionState;
import dev.mx.metadata.AbstractWeightVersionStore;
import dev.mx.metadata.MetadataStoreException;
import dev.mx.metadata.StoreNames;
import dev.mx.metadata.VersionDoc;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The weight versions of a {@code file:DIR} store, for many processes on one host. Under {@code
 * DIR/.versions/<model>/} each version is a directory {@code <id>/} holding {@code version.json}
 * (state, expected slots, landed slots with their table digests and status, leases with expiry) and
 * one {@code slot-<slot>.table} per landed slot. Every operation holds the model's lock: an in-JVM
 * lock, then an exclusive {@link FileLock} on {@code <model>/.lock}, so threads and processes take
 * turns; files are replaced by an atomic rename. A table is written before the document that says
 * its slot landed, and a version is deleted document first, so a reader never sees a slot without
 * its table.
 */
final class FileWeightVersions extends AbstractWeightVersionStore {
  private static final Logger LOG = LoggerFactory.getLogger(FileWeightVersions.class);
  private static final JsonFactory JSON = new JsonFactory();
  private static final String DOC = "version.json";
  private static final Map<Path, ReentrantLock> JVM_LOCKS = new ConcurrentHashMap<>();

  private final Path root;
  private final String uri;

  /** Junk entries a listing warned about, so a follower's polling does not repeat it. */
  private final java.util.Set<Path> warned = ConcurrentHashMap.newKeySet();

  FileWeightVersions(Path storeRoot, String uri, LongSupplier clockMillis, Runnable ensureOpen) {
    super(uri, clockMillis, ensureOpen);
    this.root = storeRoot.resolve(".versions");
    this.uri = uri;
  }

  private Path modelDir(String model) {
    return root.resolve(StoreNames.encode(model));
  }

  private Path versionDir(String model, String versionId) {
    return modelDir(model).resolve(StoreNames.encode(versionId));
  }

  private Path tablePath(String model, String versionId, String slot) {
    return versionDir(model, versionId).resolve("slot-" + StoreNames.encode(slot) + ".table");
  }

  @Override
  protected <T> T locked(String model, Supplier<T> body) {
    Path dir = modelDir(model);
    Path lockFile = dir.resolve(".lock").toAbsolutePath().normalize();
    ReentrantLock jvmLock = JVM_LOCKS.computeIfAbsent(lockFile, p -> new ReentrantLock());
    jvmLock.lock();
    try {
      OwnerOnly.createDirectories(dir);
      try (FileChannel ch =
              OwnerOnly.open(lockFile, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
          FileLock ignored = ch.lock()) {
        return body.get();
      }
    } catch (IOException e) {
      throw new MetadataStoreException(
          uri, "cannot lock the versions of '" + model + "' (" + lockFile + ")", e);
    } catch (UncheckedIOException e) {
      throw new MetadataStoreException(
          uri,
          "cannot update the versions of '"
              + model
              + "' in "
              + dir
              + ": "
              + e.getCause().getMessage(),
          e.getCause());
    } finally {
      jvmLock.unlock();
    }
  }

  @Override
  protected VersionDoc load(String model, String versionId) {
    Path doc = versionDir(model, versionId).resolve(DOC);
    try {
      return decode(doc, Files.readAllBytes(doc));
    } catch (NoSuchFileException e) {
      return null;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  protected void save(VersionDoc doc) {
    Path dir = versionDir(doc.model, doc.id);
    try {
      OwnerOnly.createDirectories(dir);
      FileMetadataStore.writeAtomically(dir, DOC, encode(doc));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  protected void delete(String model, String versionId) {
    Path dir = versionDir(model, versionId);
    try {
      // The document first: without it the version is gone, whatever is left of its tables.
      Files.deleteIfExists(dir.resolve(DOC));
      try (DirectoryStream<Path> files = Files.newDirectoryStream(dir)) {
        for (Path f : files) {
          Files.deleteIfExists(f);
        }
      }
      Files.deleteIfExists(dir);
    } catch (NoSuchFileException gone) {
      // Nothing left to delete.
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  protected List<String> ids(String model) {
    List<String> ids = new ArrayList<>();
    Path dir = modelDir(model);
    if (!Files.isDirectory(dir)) {
      return ids;
    }
    try (DirectoryStream<Path> versions = Files.newDirectoryStream(dir, "[!.]*")) {
      for (Path v : versions) {
        try {
          // Directory names are encoded ids: the real id is in the document.
          String id = decode(v.resolve(DOC), Files.readAllBytes(v.resolve(DOC))).id;
          if (!StoreNames.encode(id).equals(v.getFileName().toString())) {
            throw new IOException(
                v + " holds the document of version '" + id + "' but is not that version's folder");
          }
          ids.add(id);
        } catch (NoSuchFileException deletedOrNotAVersion) {
          // Not a version (any more): a version is deleted document first.
        } catch (IOException junk) {
          // One junk entry must not block every other version; operations on its id still fail.
          skipped(v, junk);
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return ids;
  }

  /** Warns once per entry that a listing skips it, naming its path and what is wrong. */
  private void skipped(Path entry, IOException why) {
    if (warned.add(entry.toAbsolutePath().normalize())) {
      LOG.warn(
          "{}: skipping {}, which is not a readable version: {}", uri, entry, why.getMessage());
    }
  }

  @Override
  protected void writeTable(String model, String versionId, String slot, byte[] table) {
    Path dir = versionDir(model, versionId);
    try {
      FileMetadataStore.writeAtomically(
          dir, tablePath(model, versionId, slot).getFileName().toString(), table);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  protected byte[] readTable(String model, String versionId, String slot) {
    try {
      return Files.readAllBytes(tablePath(model, versionId, slot));
    } catch (NoSuchFileException e) {
      return null;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  protected void deleteTable(String model, String versionId, String slot) {
    try {
      Files.deleteIfExists(tablePath(model, versionId, slot));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static byte[] encode(VersionDoc d) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream(512);
    try (JsonGenerator g = JSON.createGenerator(out)) {
      g.writeStartObject();
      g.writeStringField("id", d.id);
      g.writeStringField("model", d.model);
      g.writeNumberField("step", d.step);
      g.writeArrayFieldStart("expected_slots");
      for (String s : d.expectedSlots) {
        g.writeString(s);
      }
      g.writeEndArray();
      g.writeStringField("state", d.state.name());
      g.writeNumberField("created_at", d.createdAtMillis);
      g.writeObjectFieldStart("slots");
      for (Map.Entry<String, VersionDoc.Slot> e : d.slots.entrySet()) {
        g.writeObjectFieldStart(e.getKey());
        g.writeStringField("worker_id", e.getValue().workerId());
        g.writeStringField("table_sha256", e.getValue().tableDigest());
        g.writeStringField("status", e.getValue().status().name());
        g.writeEndObject();
      }
      g.writeEndObject();
      g.writeObjectFieldStart("leases");
      for (Map.Entry<String, Long> e : d.leases.entrySet()) {
        g.writeNumberField(e.getKey(), e.getValue());
      }
      g.writeEndObject();
      g.writeEndObject();
    }
    return out.toByteArray();
  }

  private static VersionDoc decode(Path path, byte[] bytes) throws IOException {
    String id = null;
    String model = null;
    Long step = null;
    Long created = null;
    WeightVersionState state = null;
    List<String> expected = new ArrayList<>();
    Map<String, VersionDoc.Slot> slots = new java.util.TreeMap<>();
    Map<String, Long> leases = new java.util.TreeMap<>();
    try (JsonParser p = JSON.createParser(bytes)) {
      expect(p.nextToken() == JsonToken.START_OBJECT, path, "not a JSON object");
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String key = p.currentName();
        p.nextToken();
        switch (key) {
          case "id" -> id = p.getText();
          case "model" -> model = p.getText();
          case "step" -> step = p.getLongValue();
          case "created_at" -> created = p.getLongValue();
          case "state" -> state = WeightVersionState.valueOf(p.getText());
          case "expected_slots" -> {
            while (p.nextToken() == JsonToken.VALUE_STRING) {
              expected.add(p.getText());
            }
          }
          case "slots" -> {
            while (p.nextToken() == JsonToken.FIELD_NAME) {
              String slot = p.currentName();
              p.nextToken();
              String worker = null;
              String digest = null;
              SlotStatus status = null;
              while (p.nextToken() == JsonToken.FIELD_NAME) {
                String f = p.currentName();
                p.nextToken();
                switch (f) {
                  case "worker_id" -> worker = p.getText();
                  case "table_sha256" -> digest = p.getText();
                  case "status" -> status = SlotStatus.valueOf(p.getText());
                  default -> p.skipChildren();
                }
              }
              expect(
                  worker != null && digest != null && status != null,
                  path,
                  "slot '" + slot + "' is incomplete");
              slots.put(slot, new VersionDoc.Slot(worker, digest, status));
            }
          }
          case "leases" -> {
            while (p.nextToken() == JsonToken.FIELD_NAME) {
              String holder = p.currentName();
              p.nextToken();
              leases.put(holder, p.getLongValue());
            }
          }
          default -> p.skipChildren();
        }
      }
    } catch (com.fasterxml.jackson.core.JsonProcessingException | IllegalArgumentException e) {
      throw new IOException("version document " + path + " is damaged: " + e.getMessage(), e);
    }
    expect(
        id != null && model != null && step != null && created != null && state != null,
        path,
        "lacks one of id, model, step, created_at, state");
    VersionDoc d = new VersionDoc(id, model, step, expected, state, created);
    d.slots.putAll(slots);
    d.leases.putAll(leases);
    return d;
  }

  private static void expect(boolean ok, Path path, String problem) throws IOException {
    if (!ok) {
      throw new IOException("version document " + path + " is damaged: " + problem);
    }
  }
}
