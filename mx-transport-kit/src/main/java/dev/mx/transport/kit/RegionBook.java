package dev.mx.transport.kit;

import dev.mx.api.annotation.Internal;
import dev.mx.api.error.TransportException;
import dev.mx.api.transport.MemoryRegistration;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.IntFunction;

/**
 * A backend's live registrations by id and the {@link RegionTable} over them, rebuilt on every
 * change and published as one immutable {@link Snapshot}, so a batch validated against a snapshot
 * keeps resolving ids to the registrations it was validated against even while others register or
 * close concurrently.
 *
 * @param <R> the backend's registration type
 */
@Internal
public final class RegionBook<R extends MemoryRegistration> {
  private final String transport;
  private final String endpoint;
  private final Map<Integer, R> byId = new LinkedHashMap<>();
  private int nextId;
  private volatile Snapshot<R> snapshot = new Snapshot<>(RegionTable.EMPTY, List.of());

  /**
   * The registrations of one moment: the table (region ids are registration ids) and each id's
   * registration.
   */
  public record Snapshot<R>(RegionTable table, List<R> byId) {
    /** The registration with this id (an id the table returned). */
    public R get(int id) {
      return byId.get(id);
    }
  }

  /** A book for the transport named {@code transport} (named in errors). */
  public RegionBook(String transport) {
    this(transport, null);
  }

  /**
   * A book for the transport named {@code transport} whose overlap errors also name the endpoint
   * {@code endpoint} (null: none).
   */
  public RegionBook(String transport, String endpoint) {
    this.transport = transport;
    this.endpoint = endpoint;
  }

  /**
   * Adds the registration {@code make} builds for the next id, covering {@code region}. The region
   * is checked against the registered ones first; {@code make} then runs under the book's lock, so
   * it may claim what the registration holds (a native mapping, a directory slot): when it throws,
   * nothing is added.
   *
   * @throws TransportException when the region overlaps one already registered; {@code make} is not
   *     called then
   */
  public synchronized R add(MemorySegment region, IntFunction<R> make) {
    int id = nextId;
    RegionTable table;
    try {
      table = tableWith(id, region);
    } catch (IllegalArgumentException overlap) {
      throw new TransportException(
          null,
          transport
              + " transport: region 0x"
              + Long.toHexString(region.address())
              + "+"
              + region.byteSize()
              + " overlaps a region already registered"
              + (endpoint == null ? "" : " on endpoint '" + endpoint + "'"),
          overlap);
    }
    R r = make.apply(id);
    nextId++;
    byId.put(id, r);
    publish(table);
    return r;
  }

  /** Forgets registration {@code id} (its close). */
  public synchronized void remove(int id) {
    if (byId.remove(id) != null) {
      publish(tableWith(-1, null));
    }
  }

  /** Forgets every registration (the endpoint's close). */
  public synchronized void clear() {
    byId.clear();
    snapshot = new Snapshot<>(RegionTable.EMPTY, List.of());
  }

  /** The registrations now, in registration order. */
  public synchronized List<R> all() {
    return List.copyOf(byId.values());
  }

  public Snapshot<R> snapshot() {
    return snapshot;
  }

  public RegionTable table() {
    return snapshot.table();
  }

  /** The table over the registrations, plus {@code pending} as {@code pendingId} when given. */
  private RegionTable tableWith(int pendingId, MemorySegment pending) {
    List<RegionTable.Region> list = new ArrayList<>(byId.size() + 1);
    for (Map.Entry<Integer, R> e : byId.entrySet()) {
      MemorySegment s = e.getValue().segment();
      list.add(new RegionTable.Region(s.address(), s.byteSize(), e.getKey()));
    }
    if (pending != null) {
      list.add(new RegionTable.Region(pending.address(), pending.byteSize(), pendingId));
    }
    return RegionTable.of(list);
  }

  private void publish(RegionTable table) {
    int maxId = -1;
    for (int id : byId.keySet()) {
      maxId = Math.max(maxId, id);
    }
    List<R> ids = new ArrayList<>(maxId + 1);
    for (int i = 0; i <= maxId; i++) {
      ids.add(byId.get(i));
    }
    snapshot = new Snapshot<>(table, Collections.unmodifiableList(ids));
  }

  /** How many registrations are live. */
  public int size() {
    return snapshot.table().size();
  }
}
