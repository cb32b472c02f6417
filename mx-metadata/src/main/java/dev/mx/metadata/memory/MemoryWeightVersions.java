package dev.mx.metadata.memory;

import dev.mx.metadata.AbstractWeightVersionStore;
import dev.mx.metadata.VersionDoc;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * The weight versions of a {@code memory:NAME} store: shared by every store of that name in this
 * JVM, one lock per model. Documents are copied in and out so callers never share mutable state.
 */
final class MemoryWeightVersions extends AbstractWeightVersionStore {
  /** directory name → model → the model's versions. */
  private static final Map<String, Map<String, Model>> DIRECTORIES = new ConcurrentHashMap<>();

  /** One model's versions; its monitor is the model lock. */
  private static final class Model {
    final Map<String, VersionDoc> docs = new ConcurrentHashMap<>();
    final Map<String, byte[]> tables = new ConcurrentHashMap<>();
  }

  private final Map<String, Model> models;

  MemoryWeightVersions(String name, String uri, LongSupplier clockMillis, Runnable ensureOpen) {
    super(uri, clockMillis, ensureOpen);
    this.models = DIRECTORIES.computeIfAbsent(name, n -> new ConcurrentHashMap<>());
  }

  private Model model(String model) {
    return models.computeIfAbsent(model, m -> new Model());
  }

  private static String tableKey(String versionId, String slot) {
    return versionId + "\0" + slot;
  }

  @Override
  protected <T> T locked(String model, Supplier<T> body) {
    Model m = model(model);
    synchronized (m) {
      return body.get();
    }
  }

  @Override
  protected VersionDoc load(String model, String versionId) {
    VersionDoc d = model(model).docs.get(versionId);
    return d == null ? null : copy(d);
  }

  @Override
  protected void save(VersionDoc doc) {
    model(doc.model).docs.put(doc.id, copy(doc));
  }

  private static VersionDoc copy(VersionDoc d) {
    VersionDoc c =
        new VersionDoc(d.id, d.model, d.step, d.expectedSlots, d.state, d.createdAtMillis);
    c.slots.putAll(d.slots);
    c.leases.putAll(d.leases);
    return c;
  }

  @Override
  protected void delete(String model, String versionId) {
    Model m = model(model);
    m.docs.remove(versionId);
    m.tables.keySet().removeIf(k -> k.startsWith(versionId + "\0"));
  }

  @Override
  protected List<String> ids(String model) {
    return new ArrayList<>(model(model).docs.keySet());
  }

  @Override
  protected void writeTable(String model, String versionId, String slot, byte[] table) {
    model(model).tables.put(tableKey(versionId, slot), table.clone());
  }

  @Override
  protected byte[] readTable(String model, String versionId, String slot) {
    byte[] t = model(model).tables.get(tableKey(versionId, slot));
    return t == null ? null : t.clone();
  }

  @Override
  protected void deleteTable(String model, String versionId, String slot) {
    model(model).tables.remove(tableKey(versionId, slot));
  }
}
