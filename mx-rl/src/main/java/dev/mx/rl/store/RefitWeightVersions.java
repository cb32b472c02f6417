package dev.mx.rl.store;

import dev.mx.api.metadata.Reclaim;
import dev.mx.api.metadata.SlotStatus;
import dev.mx.api.metadata.VersionLease;
import dev.mx.api.metadata.VersionSlot;
import dev.mx.api.metadata.WeightVersion;
import dev.mx.api.metadata.WeightVersionException;
import dev.mx.api.metadata.WeightVersionException.Reason;
import dev.mx.api.metadata.WeightVersionState;
import dev.mx.api.metadata.WeightVersionStore;
import dev.mx.metadata.VersionRules;
import dev.mx.rl.RefitFailure;
import dev.mx.rl.client.ManifestFetcher;
import dev.mx.rl.client.RefitCallException;
import dev.mx.rl.client.RefitRequests;
import dev.mx.rl.proto.WeightPayloadFormat;
import dev.mx.rl.proto.WeightVersionShard;
import dev.mx.rl.proto.WorkerRole;
import dev.mx.rl.store.DirectoryEntry.KnownVersion;
import io.grpc.Status;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;

/**
 * mx's version protocol on RefitService (docs/RL-CONTROL-PLANE.md has the table): mx's version id
 * is the idempotency key, the step the {@code version_number}; a slot's table stays in the
 * publishing process and the server gets its shard record (digest, endpoint); a lease holder is
 * registered as a GENERATOR worker of the model. Versions are listed from the publishers' directory
 * entries, as RefitService lists none.
 */
final class RefitWeightVersions implements WeightVersionStore {
  /** The uid of a version not created yet. */
  private static final String NO_UID = "(none)";

  private final RefitMetadataStore store;

  /** Leases this process holds: uid + NUL + holder → (lease id, expiry). */
  private final Map<String, HeldLease> leases = new ConcurrentHashMap<>();

  /** model + NUL + id → versions other processes created, as listings found them. */
  private final Map<String, KnownVersion> seen = new ConcurrentHashMap<>();

  /** uid → the slots this process published into it. */
  private final Map<String, Set<String>> published = new ConcurrentHashMap<>();

  private record HeldLease(String versionId, String holder, String leaseId, long expiresAtMillis) {}

  /**
   * Tables asked for while their version was STAGING, by version uid, then by shard record: a
   * follower's polls fetch each slot as soon as it is published, so READY costs the last slots
   * only. Kept for the {@value #EARLY_VERSIONS} newest versions seen.
   */
  private final LinkedHashMap<String, Map<String, CompletableFuture<Fetched>>> early =
      new LinkedHashMap<>();

  private static final int EARLY_VERSIONS = 4;

  /** model + NUL + holder → when its GENERATOR registration lapses (System.nanoTime). */
  private final Map<String, Long> registeredUntil = new ConcurrentHashMap<>();

  /** Per model, the slots a reader said it will ask for ({@link #preferSlots}); absent: all. */
  private final Map<String, Set<String>> preferred = new ConcurrentHashMap<>();

  RefitWeightVersions(RefitMetadataStore store) {
    this.store = store;
  }

  private String uri() {
    return store.uri();
  }

  // ---- looking versions up ---------------------------------------------------------------------

  /**
   * The version as this process, a listing it made, or a live publisher knows it. A uid never
   * changes for an id, so what a listing found is kept: a receiver lists the directory once per
   * version, not once per call.
   */
  private Optional<KnownVersion> lookUp(String model, String versionId) {
    KnownVersion mine = store.known.getOrDefault(model, Map.of()).get(versionId);
    if (mine == null) {
      mine = seen.get(model + "\0" + versionId);
    }
    if (mine != null) {
      return Optional.of(mine);
    }
    for (RefitMetadataStore.Served s : store.entries(model, false)) {
      for (KnownVersion v : s.entry().versions()) {
        seen.put(model + "\0" + v.id(), v);
      }
    }
    KnownVersion listed = seen.get(model + "\0" + versionId);
    return listed != null ? Optional.of(listed) : byUid(model, versionId);
  }

  /**
   * A version no mx publisher lists, named by its RefitService uid: one a ModelExpress orchestrator
   * created for its trainers, whose uid reaches generators out of band (SPEC.md section 13). Its
   * step is its {@code version_number}, 0 when it has none.
   */
  private Optional<KnownVersion> byUid(String model, String uid) {
    dev.mx.rl.proto.WeightVersion v;
    try {
      v = store.central.getVersion(uid);
    } catch (RefitCallException e) {
      if (e.code() == Status.Code.NOT_FOUND || e.code() == Status.Code.INVALID_ARGUMENT) {
        return Optional.empty();
      }
      throw refused(e, model, new KnownVersion(uid, uid, 0));
    }
    if (!v.getModelName().equals(model)) {
      throw new WeightVersionException(
          Reason.CONFLICT,
          uri()
              + ": RefitService version uid '"
              + uid
              + "' is a version of '"
              + v.getModelName()
              + "', not of '"
              + model
              + "'");
    }
    KnownVersion k = new KnownVersion(uid, uid, v.hasVersionNumber() ? v.getVersionNumber() : 0);
    seen.put(model + "\0" + uid, k);
    return Optional.of(k);
  }

  private KnownVersion existing(String model, String versionId) {
    return lookUp(model, versionId)
        .orElseThrow(() -> VersionRules.notFound(uri(), model, versionId));
  }

  private void remember(String model, KnownVersion v) {
    store.known.computeIfAbsent(model, m -> new ConcurrentHashMap<>()).put(v.id(), v);
  }

  /** mx's view of a RefitService version: READY means every expected slot has a shard record. */
  private WeightVersion toMx(String model, KnownVersion k, dev.mx.rl.proto.WeightVersion v) {
    return toMx(model, k, v, null);
  }

  /**
   * As above; with {@code ownSlots} non-null a version that is not READY lists those slots only,
   * instead of listing every shard record (a publisher's own view: O(1) bytes per publisher).
   */
  private WeightVersion toMx(
      String model, KnownVersion k, dev.mx.rl.proto.WeightVersion v, Set<String> ownSlots) {
    Map<String, SlotStatus> slots = new TreeMap<>();
    if (v.getState() == dev.mx.rl.proto.WeightVersionState.WEIGHT_VERSION_STATE_READY) {
      v.getExpectedSourceSlotsList().forEach(s -> slots.put(s, SlotStatus.READY));
    } else if (ownSlots != null) {
      ownSlots.forEach(s -> slots.put(s, SlotStatus.READY));
    } else {
      boolean ours = store.known.getOrDefault(model, Map.of()).containsKey(k.id());
      for (WeightVersionShard s : listShards(model, k)) {
        slots.put(s.getSourceSlotId(), SlotStatus.READY);
        Set<String> wanted = preferred.get(model);
        if (!ours && (wanted == null || wanted.contains(s.getSourceSlotId()))) {
          fetchEarly(k.uid(), s);
        }
      }
    }
    WeightVersionState state =
        switch (v.getState()) {
          case WEIGHT_VERSION_STATE_READY -> WeightVersionState.READY;
          case WEIGHT_VERSION_STATE_RELEASING -> WeightVersionState.RELEASING;
          default -> WeightVersionState.STAGING;
        };
    return new WeightVersion(
        k.id(),
        model,
        k.step(),
        v.getExpectedSourceSlotsList(),
        state,
        slots,
        v.getCreatedAtUnixMs());
  }

  private WeightVersion fetchVersion(String model, KnownVersion k) {
    try {
      return toMx(model, k, store.central.getVersion(k.uid()));
    } catch (RefitCallException e) {
      throw refused(e, model, k);
    }
  }

  private List<WeightVersionShard> listShards(String model, KnownVersion k) {
    try {
      return store.central.listShards(k.uid());
    } catch (RefitCallException e) {
      throw refused(e, model, k);
    }
  }

  /**
   * A refusal of RefitService as mx's reason, naming the version. RefitService never deletes a
   * version, so an unknown uid this process had seen means the server lost its state.
   */
  private WeightVersionException refused(RefitCallException e, String model, KnownVersion k) {
    String subject =
        uri()
            + ": version '"
            + k.id()
            + "' of '"
            + model
            + "' (RefitService uid '"
            + k.uid()
            + "')";
    Reason reason =
        switch (e.code()) {
          case NOT_FOUND -> Reason.NOT_FOUND;
          case ALREADY_EXISTS -> Reason.CONFLICT;
          case INVALID_ARGUMENT ->
              e.statusMessage().equals(RefitFailure.SLOT_NOT_EXPECTED.message(""))
                  ? Reason.UNKNOWN_SLOT
                  : Reason.CONFLICT;
          default -> Reason.WRONG_STATE;
        };
    String why =
        e.code() == Status.Code.NOT_FOUND
                && !k.uid().equals(NO_UID)
                && e.statusMessage().startsWith("weight version ")
                && !e.statusMessage().equals(RefitFailure.SHARD_NOT_FOUND.message(""))
            ? ": RefitService at "
                + store.server()
                + " no longer knows it; the server lost its state (restarted over a memory:"
                + " backend?): "
            : ": ";
    return new WeightVersionException(reason, subject + why + e.getMessage(), e);
  }

  // ---- WeightVersionStore ----------------------------------------------------------------------

  @Override
  public WeightVersion createVersion(
      String model, String versionId, long step, List<String> expectedSlots) {
    VersionRules.requireName(uri(), "model", model);
    VersionRules.requireName(uri(), "version id", versionId);
    if (versionId.equals(RefitMetadataStore.DIRECTORY)) {
      throw new IllegalArgumentException(
          uri() + ": version id '" + versionId + "' is reserved for mx's directory");
    }
    List<String> expected = VersionRules.expectedSlots(uri(), versionId, expectedSlots);
    dev.mx.rl.proto.WeightVersion v;
    try {
      v =
          store.central.createVersion(
              RefitRequests.createVersion(
                  model,
                  versionId,
                  WeightPayloadFormat.WEIGHT_PAYLOAD_FORMAT_FULL_TENSOR,
                  expected,
                  OptionalLong.of(step),
                  Optional.empty()));
    } catch (RefitCallException e) {
      throw refused(e, model, new KnownVersion(versionId, NO_UID, step));
    }
    KnownVersion k = new KnownVersion(versionId, v.getUid(), step);
    remember(model, k);
    store.workerFor(model); // so this process's directory entry lists the version
    return toMx(model, k, v, published.getOrDefault(k.uid(), Set.of()));
  }

  @Override
  public WeightVersion publishSlot(String model, VersionSlot slot) {
    VersionRules.requireName(uri(), "model", model);
    VersionRules.checkDigest(uri(), model, slot);
    KnownVersion k = existing(model, slot.versionId());
    String worker = store.workerFor(model);
    byte[] table = slot.table();
    try {
      store.book.put(k.uid(), slot.slot(), table);
    } catch (IllegalStateException e) {
      throw new WeightVersionException(
          Reason.CONFLICT,
          uri() + ": slot '" + slot.slot() + "' of version '" + k.id() + "': " + e.getMessage());
    }
    dev.mx.rl.proto.WeightVersion after;
    try {
      after =
          store
              .central
              .publishShard(
                  WeightVersionShard.newBuilder()
                      .setVersionId(k.uid())
                      .setSourceSlotId(slot.slot())
                      .setWorkerId(worker)
                      .setTotalBytes(table.length)
                      .setManifestDigest(slot.tableDigest())
                      .setManifestEndpoint(store.endpoint())
                      .setTransport(RefitMetadataStore.TRANSPORT)
                      .build())
              .getVersion();
    } catch (RefitCallException e) {
      store.book.forget(k.uid(), slot.slot());
      throw refused(e, model, k);
    }
    remember(model, k);
    published.computeIfAbsent(k.uid(), u -> ConcurrentHashMap.newKeySet()).add(slot.slot());
    return toMx(model, k, after, published.get(k.uid()));
  }

  /**
   * RefitService has no stale slot: a publisher that goes away lets its registration expire, and
   * receivers learn of it when its manifest cannot be fetched. Nothing to do.
   */
  @Override
  public void markSlotStale(String model, String versionId, String slot, String workerId) {}

  @Override
  public Optional<WeightVersion> version(String model, String versionId) {
    return lookUp(model, versionId).map(k -> fetchVersion(model, k));
  }

  @Override
  public List<WeightVersion> versions(String model) {
    Map<String, KnownVersion> all = new LinkedHashMap<>(store.known.getOrDefault(model, Map.of()));
    for (RefitMetadataStore.Served s : store.entries(model, false)) {
      for (KnownVersion v : s.entry().versions()) {
        all.putIfAbsent(v.id(), v);
        seen.put(model + "\0" + v.id(), v);
      }
    }
    List<WeightVersion> out = new ArrayList<>();
    for (KnownVersion k : all.values()) {
      out.add(fetchVersion(model, k));
    }
    out.sort(BY_STEP);
    return out;
  }

  /**
   * Every slot's table, fetched from the worker that published it (every worker asked at once) and
   * checked against the digest in its shard record. Where a slot has several publications, the
   * first that answers with the right bytes wins; a slot none serves is left out (the caller
   * reports it missing) unless a digest mismatch was seen, which fails naming the version, slot and
   * worker.
   */
  @Override
  public List<VersionSlot> slots(String model, String versionId) {
    return slots(model, versionId, (Set<String>) null);
  }

  @Override
  public boolean fetchesTablesSelectively() {
    return true;
  }

  @Override
  public void preferSlots(String model, Set<String> slots) {
    if (slots == null) {
      preferred.remove(model);
    } else {
      preferred.put(model, Set.copyOf(slots));
    }
  }

  /** Fetches the tables of the slots in {@code only} (null: every slot), each from its worker. */
  @Override
  public List<VersionSlot> slots(String model, String versionId, Set<String> only) {
    Optional<KnownVersion> found = lookUp(model, versionId);
    if (found.isEmpty()) {
      return List.of();
    }
    KnownVersion k = found.get();
    Map<String, List<WeightVersionShard>> bySlot = new TreeMap<>();
    for (WeightVersionShard s : listShards(model, k)) {
      if (only == null || only.contains(s.getSourceSlotId())) {
        bySlot.computeIfAbsent(s.getSourceSlotId(), x -> new ArrayList<>()).add(s);
      }
    }
    // Every slot's first publication is asked for at once; a slot's next only after its first
    // failed.
    Map<String, CompletableFuture<Fetched>> fetches = new TreeMap<>();
    Map<String, CompletableFuture<Fetched>> asked = takeEarly(k.uid());
    bySlot.forEach(
        (slot, shards) -> {
          CompletableFuture<Fetched> before = asked.get(recordKey(shards.get(0)));
          fetches.put(
              slot,
              before == null
                  ? fetchFirst(shards, 0, null)
                  : before.thenCompose(
                      f ->
                          f.table() != null
                              ? CompletableFuture.completedFuture(f)
                              : fetchFirst(shards, 0, null)));
        });
    List<VersionSlot> out = new ArrayList<>();
    for (Map.Entry<String, CompletableFuture<Fetched>> e : fetches.entrySet()) {
      Fetched f = e.getValue().join();
      if (f.table() != null) {
        WeightVersionShard s = f.from();
        out.add(
            new VersionSlot(
                versionId,
                e.getKey(),
                s.getWorkerId(),
                f.table(),
                s.getManifestDigest(),
                SlotStatus.READY,
                // mx's own records say "mx": the table names its transports itself.
                RefitMetadataStore.TRANSPORT.equals(s.getTransport()) ? null : s.getTransport()));
        continue;
      }
      ManifestFetcher.ManifestException failure = f.failure();
      boolean mismatch = failure.getMessage().contains("digest mismatch");
      throw new WeightVersionException(
          mismatch ? Reason.DIGEST_MISMATCH : Reason.NOT_FOUND,
          uri()
              + ": slot '"
              + e.getKey()
              + "' of version '"
              + versionId
              + "' of '"
              + model
              + "': "
              + failure.getMessage()
              + (mismatch
                  ? "; refusing the table"
                  : " (the worker is gone or its registration expired)"),
          failure);
    }
    return out;
  }

  /** What identifies a shard record's bytes: the same record serves the same table. */
  private static String recordKey(WeightVersionShard s) {
    return String.join(
        "\0", s.getSourceSlotId(), s.getWorkerId(), s.getManifestDigest(), s.getManifestEndpoint());
  }

  /** Starts fetching a STAGING version's published slot, once per shard record. */
  private void fetchEarly(String uid, WeightVersionShard s) {
    synchronized (early) {
      Map<String, CompletableFuture<Fetched>> mine = early.get(uid);
      if (mine == null) {
        mine = new ConcurrentHashMap<>();
        early.put(uid, mine);
        while (early.size() > EARLY_VERSIONS) {
          early.remove(early.keySet().iterator().next());
        }
      }
      mine.computeIfAbsent(recordKey(s), x -> fetchFirst(List.of(s), 0, null));
    }
  }

  /** The early fetches of a version, handed over once (its slots are being read). */
  private Map<String, CompletableFuture<Fetched>> takeEarly(String uid) {
    synchronized (early) {
      Map<String, CompletableFuture<Fetched>> mine = early.remove(uid);
      return mine == null ? Map.of() : mine;
    }
  }

  /** Waits until every early fetch started so far has ended (for tests). */
  void awaitEarlyFetches() {
    List<CompletableFuture<Fetched>> all = new ArrayList<>();
    synchronized (early) {
      early.values().forEach(m -> all.addAll(m.values()));
    }
    CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).join();
  }

  /** A slot's table and the record it came from, or why its last publication was refused. */
  private record Fetched(
      WeightVersionShard from, byte[] table, ManifestFetcher.ManifestException failure) {}

  /** The first of {@code shards} from {@code i} on whose worker answers with the right bytes. */
  private CompletableFuture<Fetched> fetchFirst(
      List<WeightVersionShard> shards, int i, ManifestFetcher.ManifestException last) {
    if (i == shards.size()) {
      return CompletableFuture.completedFuture(new Fetched(null, null, last));
    }
    WeightVersionShard s = shards.get(i);
    return store
        .fetcher
        .fetchAsync(s)
        .handle(
            (table, error) -> {
              if (error == null) {
                return CompletableFuture.completedFuture(new Fetched(s, table, null));
              }
              Throwable cause = error instanceof CompletionException c ? c.getCause() : error;
              if (cause instanceof ManifestFetcher.ManifestException m) {
                return fetchFirst(shards, i + 1, m);
              }
              return CompletableFuture.<Fetched>failedFuture(cause);
            })
        .thenCompose(f -> f);
  }

  /** READY → RELEASING. RefitService releases only READY versions: a STAGING one is refused. */
  @Override
  public WeightVersion release(String model, String versionId) {
    KnownVersion k = existing(model, versionId);
    try {
      return toMx(model, k, store.central.deleteVersion(k.uid()));
    } catch (RefitCallException e) {
      throw refused(e, model, k);
    }
  }

  /**
   * Evicts this process's shard record of {@code slot}. RefitService never deletes the version
   * itself; this process stops listing it once it holds no slot of it.
   */
  @Override
  public Reclaim reclaim(String model, String versionId, String slot, String workerId) {
    Optional<KnownVersion> found = lookUp(model, versionId);
    Set<String> mine = found.map(k -> published.getOrDefault(k.uid(), Set.of())).orElse(Set.of());
    if (found.isEmpty() || !mine.contains(slot)) {
      return new Reclaim(true, null, List.of());
    }
    KnownVersion k = found.get();
    try {
      store.central.deleteShard(k.uid(), slot, store.workerFor(model));
    } catch (RefitCallException e) {
      if (e.statusMessage().equals(RefitFailure.ACTIVE_LEASE.message(""))) {
        // RefitService does not say who holds it.
        return new Reclaim(
            false,
            WeightVersionState.RELEASING,
            List.of(new VersionLease(versionId, "(a RefitService lease)", 0)));
      }
      if (e.code() != Status.Code.NOT_FOUND) {
        return new Reclaim(false, fetchVersion(model, k).state(), List.of());
      }
    }
    store.book.forget(k.uid(), slot);
    mine.remove(slot);
    if (mine.isEmpty()) {
      published.remove(k.uid());
      store.known.getOrDefault(model, Map.of()).remove(versionId);
    }
    return new Reclaim(true, WeightVersionState.RELEASING, List.of());
  }

  @Override
  public VersionLease acquireLease(String model, String versionId, String holder, Duration ttl) {
    VersionRules.requireName(uri(), "lease holder", holder);
    KnownVersion k = existing(model, versionId);
    return register(model, k, holder, ttl);
  }

  private VersionLease register(String model, KnownVersion k, String holder, Duration ttl) {
    int seconds = (int) Math.max(1, (VersionRules.ttlMillis(uri(), ttl) + 999) / 1000);
    dev.mx.rl.proto.VersionLease l;
    String worker = model + "\0" + holder;
    try {
      Long until = registeredUntil.get(worker);
      if (until != null && until - System.nanoTime() > 0) {
        try {
          l = store.central.registerLease(k.uid(), holder, seconds);
        } catch (RefitCallException e) {
          // The registration may be gone with a restarted server: register again, once.
          l = registerAndLease(model, k, holder, seconds);
        }
      } else {
        l = registerAndLease(model, k, holder, seconds);
      }
    } catch (RefitCallException e) {
      registeredUntil.remove(worker);
      throw refused(e, model, k);
    }
    leases.put(
        k.uid() + "\0" + holder,
        new HeldLease(k.id(), holder, l.getLeaseId(), l.getExpiresAtUnixMs()));
    return new VersionLease(k.id(), holder, l.getExpiresAtUnixMs());
  }

  /**
   * Registers the holder as a GENERATOR worker of {@code model} (leases belong to those), then
   * leases. Taking the next lease within half the registration's TTL needs no registration again.
   */
  private dev.mx.rl.proto.VersionLease registerAndLease(
      String model, KnownVersion k, String holder, int seconds) {
    long at = System.nanoTime();
    store.central.registerWorker(holder, WorkerRole.WORKER_ROLE_GENERATOR, model, seconds);
    registeredUntil.put(model + "\0" + holder, at + seconds * 500_000_000L);
    return store.central.registerLease(k.uid(), holder, seconds);
  }

  @Override
  public VersionLease renewLease(String model, String versionId, String holder, Duration ttl) {
    KnownVersion k = existing(model, versionId);
    HeldLease held = leases.get(k.uid() + "\0" + holder);
    if (held == null || held.expiresAtMillis() <= System.currentTimeMillis()) {
      throw new WeightVersionException(
          Reason.LEASE_LOST,
          uri()
              + ": the lease of '"
              + holder
              + "' on version '"
              + versionId
              + "' of '"
              + model
              + "' expired or was never taken");
    }
    try {
      return register(model, k, holder, ttl);
    } catch (WeightVersionException e) {
      if (e.reason() == Reason.NOT_FOUND) {
        throw e;
      }
      throw new WeightVersionException(Reason.LEASE_LOST, e.getMessage(), e);
    }
  }

  @Override
  public boolean dropLease(String model, String versionId, String holder) {
    Optional<KnownVersion> k = lookUp(model, versionId);
    HeldLease held = k.isEmpty() ? null : leases.remove(k.get().uid() + "\0" + holder);
    if (held == null) {
      return false;
    }
    try {
      return store.central.deleteLease(k.get().uid(), held.leaseId(), holder);
    } catch (RefitCallException e) {
      return false;
    }
  }

  /** The live leases this process holds on the version: RefitService lists none. */
  @Override
  public List<VersionLease> leases(String model, String versionId) {
    long now = System.currentTimeMillis();
    return leases.values().stream()
        .filter(l -> l.versionId().equals(versionId) && l.expiresAtMillis() > now)
        .map(l -> new VersionLease(l.versionId(), l.holder(), l.expiresAtMillis()))
        .toList();
  }

  /** Drops the leases still held, so a closing receiver frees its versions at once. */
  void close() {
    for (Map.Entry<String, HeldLease> e : leases.entrySet()) {
      String uid = e.getKey().substring(0, e.getKey().indexOf('\0'));
      try {
        store.central.deleteLease(uid, e.getValue().leaseId(), e.getValue().holder());
      } catch (RefitCallException ignored) {
        // best effort: the lease expires at its TTL
      }
    }
    leases.clear();
  }
}
