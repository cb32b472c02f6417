package dev.mx.rl.redis;

/**
 * The Lua scripts of SPEC.md section 11's atomic steps. Each answers {@code OK...}, {@code
 * CREATED}, ... or the name of a {@link dev.mx.rl.RefitFailure}. "Now" is ARGV's last argument when
 * the server was given a clock, else Redis {@code TIME} (one clock for every replica). A record is
 * live while its stored expiry lies after now; PEXPIRE only collects it.
 */
final class RedisRefitScripts {
  private RedisRefitScripts() {}

  private static final String PRELUDE =
      """
      local function now_ms(arg)
        if arg ~= nil and arg ~= '' then return tonumber(arg) end
        local t = redis.call('TIME')
        return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
      end
      local function fmt(n) return string.format('%.0f', n) end
      local function live_worker(key, now)
        local w = redis.call('HMGET', key, 'role', 'model_name', 'expires_at_unix_ms')
        if not w[3] or tonumber(w[3]) <= now then return nil end
        return w
      end
      """;

  /**
   * KEYS version, reservation, expected set; ARGV uid, model, number, key, format, base, slots
   * JSON, slot count, layout, state, created_at, slots...
   */
  static final String CREATE_VERSION =
      PRELUDE
          + """
          local r = redis.call('GET', KEYS[2])
          if r then return 'EXISTING:' .. r end
          if redis.call('EXISTS', KEYS[1]) == 1 then return 'COLLISION' end
          redis.call('HSET', KEYS[1], 'uid', ARGV[1], 'model_name', ARGV[2],
            'version_number', ARGV[3], 'idempotency_key', ARGV[4], 'payload_format', ARGV[5],
            'base_version_id', ARGV[6], 'expected_source_slots', ARGV[7],
            'expected_source_slot_count', ARGV[8], 'layout_signature', ARGV[9], 'state', ARGV[10],
            'created_at_unix_ms', ARGV[11])
          for i = 12, #ARGV do redis.call('SADD', KEYS[3], ARGV[i]) end
          redis.call('SET', KEYS[2], ARGV[1])
          return 'CREATED'
          """;

  /** KEYS worker; ARGV worker_id, role, model, ttl ms, now. */
  static final String REGISTER_WORKER =
      PRELUDE
          + """
          local now = now_ms(ARGV[5])
          local w = live_worker(KEYS[1], now)
          if w and (w[1] ~= ARGV[2] or w[2] ~= ARGV[3]) then return 'WORKER_CONFLICT' end
          local exp = now + tonumber(ARGV[4])
          redis.call('HSET', KEYS[1], 'worker_id', ARGV[1], 'role', ARGV[2], 'model_name', ARGV[3],
            'expires_at_unix_ms', fmt(exp))
          redis.call('PEXPIRE', KEYS[1], ARGV[4])
          return 'OK:' .. fmt(exp)
          """;

  /**
   * KEYS version, worker, shards, coverage, expected; ARGV publication key, shard bytes, slot, now.
   */
  static final String PUBLISH_SHARD =
      PRELUDE
          + """
          local now = now_ms(ARGV[4])
          if redis.call('EXISTS', KEYS[1]) == 0 then return 'VERSION_NOT_FOUND' end
          local w = live_worker(KEYS[2], now)
          if not w then return 'WORKER_NOT_LIVE' end
          local v = redis.call('HMGET', KEYS[1], 'model_name', 'state', 'expected_source_slot_count')
          if w[2] ~= v[1] then return 'MODEL_MISMATCH' end
          if v[2] ~= '1' and v[2] ~= '2' then return 'NOT_ACCEPTING_SHARDS' end
          if redis.call('SISMEMBER', KEYS[5], ARGV[3]) == 0 then return 'SLOT_NOT_EXPECTED' end
          local cur = redis.call('HGET', KEYS[3], ARGV[1])
          if cur then
            if cur == ARGV[2] then return 'OK:' .. v[2] end
            return 'SHARD_CONFLICT'
          end
          redis.call('HSET', KEYS[3], ARGV[1], ARGV[2])
          redis.call('SADD', KEYS[4], ARGV[3])
          local state = v[2]
          if redis.call('SCARD', KEYS[4]) == tonumber(v[3]) then
            redis.call('HSET', KEYS[1], 'state', '2')
            state = '2'
          end
          return 'OK:' .. state
          """;

  /** KEYS version. */
  static final String DELETE_VERSION =
      """
      local s = redis.call('HGET', KEYS[1], 'state')
      if not s then return 'VERSION_NOT_FOUND' end
      if s == '3' then return 'OK' end
      if s ~= '2' then return 'VERSION_NOT_READY' end
      redis.call('HSET', KEYS[1], 'state', '3')
      return 'OK'
      """;

  /** KEYS version, worker, shards, lease index; ARGV publication key, expected bytes, now. */
  static final String DELETE_SHARD =
      PRELUDE
          + """
          local now = now_ms(ARGV[3])
          local s = redis.call('HGET', KEYS[1], 'state')
          if not s then return 'VERSION_NOT_FOUND' end
          if s ~= '3' then return 'NOT_RELEASING' end
          if not live_worker(KEYS[2], now) then return 'WORKER_NOT_LIVE' end
          local cur = redis.call('HGET', KEYS[3], ARGV[1])
          if not cur then return 'SHARD_NOT_FOUND' end
          if cur ~= ARGV[2] then return 'SHARD_CHANGED' end
          redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', fmt(now))
          local held = redis.call('ZRANGE', KEYS[4], 0, 0)
          if #held > 0 then return 'ACTIVE_LEASE:' .. held[1] end
          redis.call('HDEL', KEYS[3], ARGV[1])
          return 'DELETED'
          """;

  /**
   * KEYS version, worker, lease, lease index; ARGV lease_id, version_id, worker_id, ttl ms, now.
   */
  static final String REGISTER_LEASE =
      PRELUDE
          + """
          local now = now_ms(ARGV[5])
          local v = redis.call('HMGET', KEYS[1], 'state', 'model_name')
          if not v[1] then return 'VERSION_NOT_FOUND' end
          local w = live_worker(KEYS[2], now)
          if not w then return 'WORKER_NOT_LIVE' end
          if w[1] ~= '2' then return 'NOT_GENERATOR' end
          if w[2] ~= v[2] then return 'MODEL_MISMATCH' end
          local l = redis.call('HMGET', KEYS[3], 'lease_id', 'version_id', 'worker_id',
            'expires_at_unix_ms')
          if l[4] and tonumber(l[4]) > now then
            if l[1] ~= ARGV[1] or l[2] ~= ARGV[2] or l[3] ~= ARGV[3] then
              return 'LEASE_ID_CONFLICT'
            end
            if v[1] ~= '2' and v[1] ~= '3' then return 'NOT_ACCEPTING_LEASES' end
          elseif v[1] ~= '2' then
            return 'NOT_ACCEPTING_LEASES'
          end
          local exp = now + tonumber(ARGV[4])
          redis.call('HSET', KEYS[3], 'lease_id', ARGV[1], 'version_id', ARGV[2],
            'worker_id', ARGV[3], 'expires_at_unix_ms', fmt(exp))
          redis.call('PEXPIRE', KEYS[3], ARGV[4])
          redis.call('ZADD', KEYS[4], fmt(exp), ARGV[1])
          return 'OK:' .. fmt(exp)
          """;

  /** KEYS lease, lease index; ARGV lease_id, version_id, worker_id, now. */
  static final String DELETE_LEASE =
      PRELUDE
          + """
          local now = now_ms(ARGV[4])
          local l = redis.call('HMGET', KEYS[1], 'lease_id', 'version_id', 'worker_id',
            'expires_at_unix_ms')
          if not l[4] or tonumber(l[4]) <= now then
            redis.call('DEL', KEYS[1])
            redis.call('ZREM', KEYS[2], ARGV[1])
            return 'NOT_FOUND'
          end
          if l[1] ~= ARGV[1] or l[2] ~= ARGV[2] or l[3] ~= ARGV[3] then
            return 'LEASE_OWNED_ELSEWHERE:' .. l[3]
          end
          redis.call('DEL', KEYS[1])
          redis.call('ZREM', KEYS[2], ARGV[1])
          return 'DELETED'
          """;

  /** KEYS lease; ARGV now. The lease's fields when live, else an empty list. */
  static final String READ_LEASE =
      PRELUDE
          + """
          local now = now_ms(ARGV[1])
          local l = redis.call('HMGET', KEYS[1], 'lease_id', 'version_id', 'worker_id',
            'expires_at_unix_ms')
          if not l[4] or tonumber(l[4]) <= now then return {} end
          return l
          """;
}
