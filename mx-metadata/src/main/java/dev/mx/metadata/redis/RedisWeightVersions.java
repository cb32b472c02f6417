package dev.mx.metadata.redis;

import dev.mx.api.metadata.Reclaim;
import dev.mx.api.metadata.SlotStatus;
import dev.mx.api.metadata.VersionLease;
import dev.mx.api.metadata.VersionSlot;
import dev.mx.api.metadata.WeightVersion;
import dev.mx.api.metadata.WeightVersionException;
import dev.mx.api.metadata.WeightVersionException.Reason;
import dev.mx.api.metadata.WeightVersionState;
import dev.mx.api.metadata.WeightVersionStore;
import dev.mx.metadata.MetadataStoreException;
import dev.mx.metadata.StoreNames;
import dev.mx.metadata.VersionRules;
import io.lettuce.core.RedisException;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.sync.RedisCommands;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The weight versions of a {@code redis:} store. Every transition is one Lua script, so it is
 * atomic across every client of the server, and lease expiry uses the server's {@code TIME}. Per
 * version, under the model's hash tag {@code mx:{<model>}:version:<id>}: the hash itself ({@code
 * id, model, step, state, created_at}) and {@code :expected} (set), {@code :slots} (slot →
 * READY|STALE), {@code :workers}, {@code :digests}, {@code :tables} (slot → worker, table SHA-256,
 * table), {@code :leases} (sorted set of holders scored by expiry); {@code mx:{<model>}:versions}
 * indexes ids by step. Writes renew the store's GC TTL on the version's keys, so versions nobody
 * touches any more vanish on their own.
 */
final class RedisWeightVersions implements WeightVersionStore {
  /**
   * Shared by every script: KEYS 1..8 = version, expected, slots, workers, digests, tables, leases,
   * index.
   */
  private static final String LIB =
      """
      local function now_ms()
        local t = redis.call('TIME')
        return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
      end
      local function snapshot()
        local v = redis.call('HMGET', KEYS[1], 'id', 'model', 'step', 'state', 'created_at')
        return {v[1], v[2], v[3], v[4], v[5], redis.call('SMEMBERS', KEYS[2]), redis.call('HGETALL', KEYS[3])}
      end
      local function touch(ttl)
        for i = 1, 8 do
          if redis.call('EXISTS', KEYS[i]) == 1 then redis.call('EXPIRE', KEYS[i], ttl) end
        end
      end
      """;

  // ARGV: id, model, step, gc ttl, expected slots...
  private static final String CREATE =
      LIB
          + """
      if redis.call('EXISTS', KEYS[1]) == 1 then
        local same = redis.call('HGET', KEYS[1], 'step') == ARGV[3] and redis.call('SCARD', KEYS[2]) == #ARGV - 4
        if same and #ARGV > 4 then
          -- One command however many slots (SMISMEMBER, Redis 6.2+): every publisher of a job
          -- calls this, so a per-slot SISMEMBER made each one's publish O(ranks).
          local member = redis.call('SMISMEMBER', KEYS[2], unpack(ARGV, 5))
          for i = 1, #member do
            if member[i] == 0 then same = false end
          end
        end
        if not same then return {'CONFLICT', snapshot()} end
        return {'OK', snapshot()}
      end
      redis.call('HSET', KEYS[1], 'id', ARGV[1], 'model', ARGV[2], 'step', ARGV[3], 'state', 'STAGING',
          'created_at', string.format('%d', now_ms()))
      for i = 5, #ARGV do redis.call('SADD', KEYS[2], ARGV[i]) end
      redis.call('ZADD', KEYS[8], ARGV[3], ARGV[1])
      touch(ARGV[4])
      return {'OK', snapshot()}
      """;

  // ARGV: slot, worker, digest, table, gc ttl
  private static final String PUBLISH_SLOT =
      LIB
          + """
      if redis.call('EXISTS', KEYS[1]) == 0 then return {'NOT_FOUND'} end
      local state = redis.call('HGET', KEYS[1], 'state')
      if state == 'RELEASING' then return {'WRONG_STATE', snapshot()} end
      if redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 0 then return {'UNKNOWN_SLOT', snapshot()} end
      local w = redis.call('HGET', KEYS[4], ARGV[1])
      if w then
        local d = redis.call('HGET', KEYS[5], ARGV[1])
        if w ~= ARGV[2] or d ~= ARGV[3] then return {'CONFLICT', snapshot(), w, d} end
      else
        redis.call('HSET', KEYS[4], ARGV[1], ARGV[2])
        redis.call('HSET', KEYS[5], ARGV[1], ARGV[3])
        redis.call('HSET', KEYS[6], ARGV[1], ARGV[4])
      end
      redis.call('HSET', KEYS[3], ARGV[1], 'READY')
      if state == 'STAGING' and redis.call('HLEN', KEYS[3]) == redis.call('SCARD', KEYS[2]) then
        redis.call('HSET', KEYS[1], 'state', 'READY')
      end
      touch(ARGV[5])
      return {'OK', snapshot()}
      """;

  // ARGV: slot, worker, gc ttl
  private static final String MARK_STALE =
      LIB
          + """
      local w = redis.call('HGET', KEYS[4], ARGV[1])
      if not w then return {'OK'} end
      if w ~= ARGV[2] then return {'CONFLICT', snapshot(), w} end
      redis.call('HSET', KEYS[3], ARGV[1], 'STALE')
      touch(ARGV[3])
      return {'OK'}
      """;

  // ARGV: gc ttl
  private static final String RELEASE =
      LIB
          + """
      if redis.call('EXISTS', KEYS[1]) == 0 then return {'NOT_FOUND'} end
      redis.call('HSET', KEYS[1], 'state', 'RELEASING')
      touch(ARGV[1])
      return {'OK', snapshot()}
      """;

  // ARGV: slot, worker, gc ttl
  private static final String RECLAIM =
      LIB
          + """
      if redis.call('EXISTS', KEYS[1]) == 0 then return {'GONE'} end
      redis.call('ZREMRANGEBYSCORE', KEYS[7], '-inf', now_ms())
      local state = redis.call('HGET', KEYS[1], 'state')
      if state ~= 'RELEASING' or redis.call('ZCARD', KEYS[7]) > 0 then
        return {'BLOCKED', state, redis.call('ZRANGE', KEYS[7], 0, -1, 'WITHSCORES')}
      end
      local w = redis.call('HGET', KEYS[4], ARGV[1])
      if w and w ~= ARGV[2] then return {'CONFLICT', snapshot(), w} end
      if w then
        for i = 3, 6 do redis.call('HDEL', KEYS[i], ARGV[1]) end
      end
      for _, status in ipairs(redis.call('HVALS', KEYS[3])) do
        if status == 'READY' then
          touch(ARGV[3])
          return {'GRANTED'}
        end
      end
      redis.call('ZREM', KEYS[8], redis.call('HGET', KEYS[1], 'id'))
      for i = 1, 7 do redis.call('DEL', KEYS[i]) end
      return {'GRANTED'}
      """;

  // ARGV: holder, ttl ms, renew only ('1') or acquire ('0'), gc ttl
  private static final String LEASE =
      LIB
          + """
      if redis.call('EXISTS', KEYS[1]) == 0 then return {'NOT_FOUND'} end
      local now = now_ms()
      redis.call('ZREMRANGEBYSCORE', KEYS[7], '-inf', now)
      local held = redis.call('ZSCORE', KEYS[7], ARGV[1])
      if not held then
        if ARGV[3] == '1' then return {'LEASE_LOST', snapshot()} end
        if redis.call('HGET', KEYS[1], 'state') ~= 'READY' then return {'WRONG_STATE', snapshot()} end
      end
      local expiry = now + tonumber(ARGV[2])
      redis.call('ZADD', KEYS[7], expiry, ARGV[1])
      touch(ARGV[4])
      return {'OK', string.format('%d', expiry)}
      """;

  private static final String LIVE_LEASES =
      LIB
          + """
      return redis.call('ZRANGEBYSCORE', KEYS[7], '(' .. string.format('%d', now_ms()), '+inf', 'WITHSCORES')
      """;

  private static final String READ =
      LIB
          + """
      if redis.call('EXISTS', KEYS[1]) == 0 then return {'NOT_FOUND'} end
      return {'OK', snapshot()}
      """;

  private static final String READ_SLOTS =
      LIB
          + """
      return {redis.call('HGETALL', KEYS[3]), redis.call('HGETALL', KEYS[4]), redis.call('HGETALL', KEYS[5]),
          redis.call('HGETALL', KEYS[6])}
      """;

  private final String uri;
  private final RedisCommands<byte[], byte[]> redis;
  private final long gcTtlSeconds;
  private final Runnable ensureOpen;

  RedisWeightVersions(
      String uri, RedisCommands<byte[], byte[]> redis, long gcTtlSeconds, Runnable ensureOpen) {
    this.uri = uri;
    this.redis = redis;
    this.gcTtlSeconds = gcTtlSeconds;
    this.ensureOpen = ensureOpen;
  }

  @Override
  public WeightVersion createVersion(
      String model, String versionId, long step, List<String> expectedSlots) {
    ensureOpen.run();
    VersionRules.requireName(uri, "model", model);
    VersionRules.requireName(uri, "version id", versionId);
    List<String> expected = VersionRules.expectedSlots(uri, versionId, expectedSlots);
    List<byte[]> args =
        new ArrayList<>(List.of(utf8(versionId), utf8(model), utf8(Long.toString(step)), gcTtl()));
    expected.forEach(s -> args.add(utf8(s)));
    List<Object> r =
        eval(
            "create version '" + versionId + "'",
            CREATE,
            model,
            versionId,
            args.toArray(byte[][]::new));
    WeightVersion v = snapshot(r.get(1));
    if (str(r.get(0)).equals("CONFLICT")) {
      throw new WeightVersionException(
          Reason.CONFLICT,
          uri
              + ": version '"
              + versionId
              + "' of '"
              + model
              + "' exists with step "
              + v.step()
              + " and slots "
              + v.expectedSlots()
              + ", not step "
              + step
              + " and slots "
              + expected);
    }
    return v;
  }

  @Override
  public WeightVersion publishSlot(String model, VersionSlot slot) {
    ensureOpen.run();
    VersionRules.requireName(uri, "model", model);
    VersionRules.checkDigest(uri, model, slot);
    List<Object> r =
        eval(
            "publish slot '" + slot.slot() + "' of version '" + slot.versionId() + "'",
            PUBLISH_SLOT,
            model,
            slot.versionId(),
            utf8(slot.slot()),
            utf8(slot.workerId()),
            utf8(slot.tableDigest()),
            slot.table(),
            gcTtl());
    String code = str(r.get(0));
    if (code.equals("NOT_FOUND")) {
      throw VersionRules.notFound(uri, model, slot.versionId());
    }
    WeightVersion v = snapshot(r.get(1));
    return switch (code) {
      case "OK" -> v;
      case "WRONG_STATE" ->
          throw VersionRules.wrongState(uri, v, "slot '" + slot.slot() + "' cannot land");
      case "UNKNOWN_SLOT" -> throw VersionRules.unknownSlot(uri, v, slot.slot());
      case "CONFLICT" ->
          throw VersionRules.slotConflict(uri, v, slot, str(r.get(2)), str(r.get(3)));
      default -> throw unexpected(code);
    };
  }

  @Override
  public void markSlotStale(String model, String versionId, String slot, String workerId) {
    ensureOpen.run();
    List<Object> r =
        eval(
            "mark slot '" + slot + "' of version '" + versionId + "' STALE",
            MARK_STALE,
            model,
            versionId,
            utf8(slot),
            utf8(workerId),
            gcTtl());
    if (str(r.get(0)).equals("CONFLICT")) {
      throw VersionRules.notOwner(uri, snapshot(r.get(1)), slot, workerId, str(r.get(2)));
    }
  }

  @Override
  public Optional<WeightVersion> version(String model, String versionId) {
    ensureOpen.run();
    List<Object> r = eval("read version '" + versionId + "'", READ, model, versionId);
    return str(r.get(0)).equals("OK") ? Optional.of(snapshot(r.get(1))) : Optional.empty();
  }

  @Override
  public List<WeightVersion> versions(String model) {
    ensureOpen.run();
    VersionRules.requireName(uri, "model", model);
    List<byte[]> ids =
        run("list versions of '" + model + "'", () -> redis.zrange(utf8(indexKey(model)), 0, -1));
    List<WeightVersion> out = new ArrayList<>();
    for (byte[] id : ids) {
      String versionId = str(id);
      Optional<WeightVersion> v = version(model, versionId);
      if (v.isPresent()) {
        out.add(v.get());
      } else {
        // Expired by the GC TTL: drop it from the index too.
        run("prune version '" + versionId + "'", () -> redis.zrem(utf8(indexKey(model)), id));
      }
    }
    out.sort(BY_STEP);
    return out;
  }

  @Override
  public List<VersionSlot> slots(String model, String versionId) {
    ensureOpen.run();
    List<Object> r =
        eval("read the slots of version '" + versionId + "'", READ_SLOTS, model, versionId);
    Map<String, Object> status = pairs(r.get(0));
    Map<String, Object> workers = pairs(r.get(1));
    Map<String, Object> digests = pairs(r.get(2));
    Map<String, Object> tables = pairs(r.get(3));
    List<VersionSlot> out = new ArrayList<>();
    for (Map.Entry<String, Object> e : new java.util.TreeMap<>(status).entrySet()) {
      String s = e.getKey();
      if (workers.containsKey(s) && digests.containsKey(s) && tables.containsKey(s)) {
        out.add(
            new VersionSlot(
                versionId,
                s,
                str(workers.get(s)),
                (byte[]) tables.get(s),
                str(digests.get(s)),
                SlotStatus.valueOf(str(e.getValue()))));
      }
    }
    return out;
  }

  @Override
  public WeightVersion release(String model, String versionId) {
    ensureOpen.run();
    List<Object> r =
        eval("release version '" + versionId + "'", RELEASE, model, versionId, gcTtl());
    if (str(r.get(0)).equals("NOT_FOUND")) {
      throw VersionRules.notFound(uri, model, versionId);
    }
    return snapshot(r.get(1));
  }

  @Override
  public Reclaim reclaim(String model, String versionId, String slot, String workerId) {
    ensureOpen.run();
    List<Object> r =
        eval(
            "reclaim slot '" + slot + "' of version '" + versionId + "'",
            RECLAIM,
            model,
            versionId,
            utf8(slot),
            utf8(workerId),
            gcTtl());
    return switch (str(r.get(0))) {
      case "GONE" -> new Reclaim(true, null, List.of());
      case "GRANTED" -> new Reclaim(true, WeightVersionState.RELEASING, List.of());
      case "BLOCKED" ->
          new Reclaim(
              false, WeightVersionState.valueOf(str(r.get(1))), leases(versionId, r.get(2)));
      case "CONFLICT" ->
          throw VersionRules.notOwner(uri, snapshot(r.get(1)), slot, workerId, str(r.get(2)));
      default -> throw unexpected(str(r.get(0)));
    };
  }

  @Override
  public VersionLease acquireLease(String model, String versionId, String holder, Duration ttl) {
    return lease(model, versionId, holder, ttl, false);
  }

  @Override
  public VersionLease renewLease(String model, String versionId, String holder, Duration ttl) {
    return lease(model, versionId, holder, ttl, true);
  }

  private VersionLease lease(
      String model, String versionId, String holder, Duration ttl, boolean renewOnly) {
    ensureOpen.run();
    VersionRules.requireName(uri, "lease holder", holder);
    long ttlMillis = VersionRules.ttlMillis(uri, ttl);
    List<Object> r =
        eval(
            (renewOnly ? "renew" : "take")
                + " the lease of '"
                + holder
                + "' on version '"
                + versionId
                + "'",
            LEASE,
            model,
            versionId,
            utf8(holder),
            utf8(Long.toString(ttlMillis)),
            utf8(renewOnly ? "1" : "0"),
            gcTtl());
    return switch (str(r.get(0))) {
      case "OK" -> new VersionLease(versionId, holder, Long.parseLong(str(r.get(1))));
      case "NOT_FOUND" -> throw VersionRules.notFound(uri, model, versionId);
      case "LEASE_LOST" -> throw VersionRules.leaseLost(uri, snapshot(r.get(1)), holder);
      case "WRONG_STATE" ->
          throw VersionRules.wrongState(
              uri, snapshot(r.get(1)), "no new lease for '" + holder + "'");
      default -> throw unexpected(str(r.get(0)));
    };
  }

  @Override
  public boolean dropLease(String model, String versionId, String holder) {
    ensureOpen.run();
    Long removed =
        run(
            "drop the lease of '" + holder + "' on version '" + versionId + "'",
            () -> redis.zrem(utf8(versionKey(model, versionId) + ":leases"), utf8(holder)));
    return removed != null && removed > 0;
  }

  @Override
  public List<VersionLease> leases(String model, String versionId) {
    ensureOpen.run();
    List<Object> r =
        eval("list the leases of version '" + versionId + "'", LIVE_LEASES, model, versionId);
    return leases(versionId, r);
  }

  private static List<VersionLease> leases(String versionId, Object flatWithScores) {
    List<VersionLease> out = new ArrayList<>();
    List<?> flat = (List<?>) flatWithScores;
    for (int i = 0; i + 1 < flat.size(); i += 2) {
      out.add(
          new VersionLease(
              versionId, str(flat.get(i)), (long) Double.parseDouble(str(flat.get(i + 1)))));
    }
    out.sort(java.util.Comparator.comparing(VersionLease::holder));
    return out;
  }

  private WeightVersion snapshot(Object raw) {
    List<?> f = (List<?>) raw;
    Map<String, SlotStatus> slots = new LinkedHashMap<>();
    pairs(f.get(6)).forEach((s, st) -> slots.put(s, SlotStatus.valueOf(str(st))));
    List<String> expected = ((List<?>) f.get(5)).stream().map(RedisWeightVersions::str).toList();
    try {
      return new WeightVersion(
          str(f.get(0)),
          str(f.get(1)),
          Long.parseLong(str(f.get(2))),
          expected,
          WeightVersionState.valueOf(str(f.get(3))),
          slots,
          Long.parseLong(str(f.get(4))));
    } catch (RuntimeException e) {
      throw new MetadataStoreException(uri, "a version hash is damaged: " + f, e);
    }
  }

  private static Map<String, Object> pairs(Object flat) {
    Map<String, Object> out = new LinkedHashMap<>();
    List<?> l = (List<?>) flat;
    for (int i = 0; i + 1 < l.size(); i += 2) {
      out.put(str(l.get(i)), l.get(i + 1));
    }
    return out;
  }

  private MetadataStoreException unexpected(String code) {
    return new MetadataStoreException(
        uri, "unexpected answer '" + code + "' from a version script");
  }

  private List<Object> eval(
      String what, String script, String model, String versionId, byte[]... args) {
    VersionRules.requireName(uri, "model", model);
    VersionRules.requireName(uri, "version id", versionId);
    String base = versionKey(model, versionId);
    byte[][] keys = {
      utf8(base),
      utf8(base + ":expected"),
      utf8(base + ":slots"),
      utf8(base + ":workers"),
      utf8(base + ":digests"),
      utf8(base + ":tables"),
      utf8(base + ":leases"),
      utf8(indexKey(model))
    };
    return run(what, () -> redis.eval(script, ScriptOutputType.MULTI, keys, args));
  }

  private <T> T run(String what, java.util.function.Supplier<T> command) {
    try {
      return command.get();
    } catch (RedisException e) {
      throw new MetadataStoreException(uri, "cannot " + what + ": " + e.getMessage(), e);
    }
  }

  private byte[] gcTtl() {
    return utf8(Long.toString(gcTtlSeconds));
  }

  private static String indexKey(String model) {
    return "mx:{" + StoreNames.encode(model) + "}:versions";
  }

  private static String versionKey(String model, String versionId) {
    return "mx:{" + StoreNames.encode(model) + "}:version:" + StoreNames.encode(versionId);
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static String str(Object bytes) {
    if (bytes == null) {
      throw new IllegalStateException("missing field");
    }
    return bytes instanceof byte[] b ? new String(b, StandardCharsets.UTF_8) : bytes.toString();
  }

  @Override
  public String toString() {
    return "RedisWeightVersions[" + uri + "]";
  }
}
