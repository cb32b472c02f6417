package dev.mx.rl.redis;

import static dev.mx.rl.RefitText.q;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.google.protobuf.InvalidProtocolBufferException;
import dev.mx.rl.RefitBackend;
import dev.mx.rl.RefitClock;
import dev.mx.rl.RefitException;
import dev.mx.rl.RefitFailure;
import dev.mx.rl.RefitText;
import dev.mx.rl.proto.VersionLease;
import dev.mx.rl.proto.WeightVersion;
import dev.mx.rl.proto.WeightVersionShard;
import dev.mx.rl.proto.WeightVersionState;
import dev.mx.rl.proto.WorkerRegistration;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.codec.ByteArrayCodec;
import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;

/**
 * RefitService's records in Redis, in SPEC.md section 11's layout ({@code mx:refit:version:{uid}}
 * hash, {@code :expected-source-slots}, {@code :coverage}, {@code :shards}, {@code :leases}, {@code
 * :lease:{id}}, {@code mx:refit:version-request:{model}:{key}}, {@code mx:refit:worker:{id}}), each
 * atomic step one Lua script ({@link RedisRefitScripts}). Expiries use Redis {@code TIME} unless a
 * clock is given (tests), so replicas agree on liveness.
 */
public final class RedisRefitBackend implements RefitBackend {
  private static final JsonFactory JSON = new JsonFactory();
  private static final Duration COMMAND_TIMEOUT = Duration.ofSeconds(10);

  private final String described;
  private final RefitClock clock;
  private final RedisClient client;
  private final StatefulRedisConnection<byte[], byte[]> connection;
  private final RedisCommands<byte[], byte[]> redis;
  private final AtomicBoolean closed = new AtomicBoolean();

  /**
   * Connects to {@code uri} ({@code redis://[:password@]host:port[/db]}).
   *
   * @param clock the clock of expiries, or null for Redis {@code TIME} (what servers use)
   * @throws RefitException UNAVAILABLE naming host and port when Redis cannot be reached
   */
  public RedisRefitBackend(String uri, RefitClock clock) {
    RedisURI parsed;
    try {
      parsed = RedisURI.create(uri);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "malformed Redis URI (expected redis://[:password@]host:port[/db]): " + e.getMessage(),
          e);
    }
    parsed.setTimeout(COMMAND_TIMEOUT);
    // Never log a password.
    this.described = "redis://" + parsed.getHost() + ":" + parsed.getPort();
    this.clock = clock;
    RedisClient c = RedisClient.create(parsed);
    try {
      this.connection = c.connect(ByteArrayCodec.INSTANCE);
    } catch (RedisException e) {
      c.shutdown(Duration.ZERO, Duration.ofSeconds(2));
      throw RefitFailure.BACKEND_UNAVAILABLE.raise(
          "cannot connect to " + described + ": " + e.getMessage(), described);
    }
    this.client = c;
    this.redis = connection.sync();
  }

  @Override
  public String describe() {
    return described;
  }

  // ---- keys ----------------------------------------------------------------------------------

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static String s(Object o) {
    return o == null ? null : new String((byte[]) o, StandardCharsets.UTF_8);
  }

  private static String versionKey(String uid) {
    return "mx:refit:version:" + uid;
  }

  private static String worker(String workerId) {
    return "mx:refit:worker:" + workerId;
  }

  private String now() {
    return clock == null ? "" : Long.toString(clock.nowMillis());
  }

  // ---- calls ---------------------------------------------------------------------------------

  private <T> T call(String subject, Supplier<T> command) {
    if (closed.get()) {
      throw RefitFailure.BACKEND_UNAVAILABLE.raise(described + " is closed", subject);
    }
    try {
      return command.get();
    } catch (RedisCommandExecutionException e) {
      throw RefitFailure.INTERNAL.raise("unexpected Redis response: " + e.getMessage(), subject);
    } catch (RedisException e) {
      throw RefitFailure.BACKEND_UNAVAILABLE.raise(described + ": " + e.getMessage(), subject);
    }
  }

  private String script(String subject, String script, String[] keys, byte[]... args) {
    byte[][] k = new byte[keys.length][];
    for (int i = 0; i < keys.length; i++) {
      k[i] = b(keys[i]);
    }
    Object r = call(subject, () -> redis.eval(script, ScriptOutputType.VALUE, k, args));
    return s(r);
  }

  /** A script's refusal as the failure it names ({@code NAME} or {@code NAME:detail}). */
  private static RefitException refusal(String answer, String subject) {
    int colon = answer.indexOf(':');
    String name = colon < 0 ? answer : answer.substring(0, colon);
    String detail = colon < 0 ? "" : answer.substring(colon + 1);
    RefitFailure f;
    try {
      f = RefitFailure.valueOf(name);
    } catch (IllegalArgumentException e) {
      return RefitFailure.INTERNAL.raise("unexpected Redis response: " + answer, subject);
    }
    String more =
        switch (f) {
          case ACTIVE_LEASE -> ", held by lease " + q(detail);
          case LEASE_OWNED_ELSEWHERE -> ", held by worker " + q(detail);
          default -> "";
        };
    return f.raise(subject + more);
  }

  // ---- versions ------------------------------------------------------------------------------

  @Override
  public Optional<WeightVersion> version(String uid) {
    Map<byte[], byte[]> h = call("version " + q(uid), () -> redis.hgetall(b(versionKey(uid))));
    if (h.isEmpty()) {
      return Optional.empty();
    }
    java.util.HashMap<String, String> f = new java.util.HashMap<>();
    h.forEach((k, v) -> f.put(s(k), s(v)));
    return Optional.of(decodeVersion(uid, f));
  }

  private static String field(Map<String, String> f, String name, String uid) {
    String v = f.get(name);
    if (v == null) {
      throw RefitFailure.INTERNAL.raise(
          "Refit metadata record is missing " + name, "version " + q(uid));
    }
    return v;
  }

  private static WeightVersion decodeVersion(String uid, Map<String, String> f) {
    try {
      WeightVersion.Builder v =
          WeightVersion.newBuilder()
              .setUid(field(f, "uid", uid))
              .setModelName(field(f, "model_name", uid))
              .setIdempotencyKey(field(f, "idempotency_key", uid))
              .setPayloadFormatValue(Integer.parseInt(field(f, "payload_format", uid)))
              .addAllExpectedSourceSlots(slots(field(f, "expected_source_slots", uid)))
              .setLayoutSignature(field(f, "layout_signature", uid))
              .setStateValue(Integer.parseInt(field(f, "state", uid)))
              .setCreatedAtUnixMs(Long.parseUnsignedLong(field(f, "created_at_unix_ms", uid)));
      String number = field(f, "version_number", uid);
      if (!number.isEmpty()) {
        v.setVersionNumber(Long.parseUnsignedLong(number));
      }
      String base = field(f, "base_version_id", uid);
      if (!base.isEmpty()) {
        v.setBaseVersionId(base);
      }
      return v.build();
    } catch (NumberFormatException | IOException e) {
      throw RefitFailure.INTERNAL.raise(
          "invalid field in Refit metadata: " + e.getMessage(), "version " + q(uid));
    }
  }

  private static String slotsJson(List<String> slots) {
    StringWriter w = new StringWriter();
    try (JsonGenerator g = JSON.createGenerator(w)) {
      g.writeStartArray();
      for (String s : slots) {
        g.writeString(s);
      }
      g.writeEndArray();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return w.toString();
  }

  private static List<String> slots(String json) throws IOException {
    List<String> out = new ArrayList<>();
    try (JsonParser p = JSON.createParser(json)) {
      if (p.nextToken() != JsonToken.START_ARRAY) {
        throw new IOException("expected_source_slots is not a JSON array");
      }
      for (JsonToken t = p.nextToken(); t != JsonToken.END_ARRAY; t = p.nextToken()) {
        if (t != JsonToken.VALUE_STRING) {
          throw new IOException("expected_source_slots holds a non-string");
        }
        out.add(p.getText());
      }
    }
    return out;
  }

  private static String reservation(String modelName, String idempotencyKey) {
    return "mx:refit:version-request:" + modelName + ":" + idempotencyKey;
  }

  @Override
  public CreateOutcome createVersion(WeightVersion v) {
    String uid = v.getUid();
    List<byte[]> args = new ArrayList<>();
    for (String a :
        new String[] {
          uid,
          v.getModelName(),
          v.hasVersionNumber() ? Long.toUnsignedString(v.getVersionNumber()) : "",
          v.getIdempotencyKey(),
          Integer.toString(v.getPayloadFormatValue()),
          v.hasBaseVersionId() ? v.getBaseVersionId() : "",
          slotsJson(v.getExpectedSourceSlotsList()),
          Integer.toString(v.getExpectedSourceSlotsCount()),
          v.getLayoutSignature(),
          Integer.toString(v.getStateValue()),
          Long.toUnsignedString(v.getCreatedAtUnixMs())
        }) {
      args.add(b(a));
    }
    for (String slot : v.getExpectedSourceSlotsList()) {
      args.add(b(slot));
    }
    String subject = "version " + q(uid);
    String r =
        script(
            subject,
            RedisRefitScripts.CREATE_VERSION,
            new String[] {
              versionKey(uid),
              reservation(v.getModelName(), v.getIdempotencyKey()),
              versionKey(uid) + ":expected-source-slots"
            },
            args.toArray(byte[][]::new));
    if (r.equals("CREATED")) {
      return CreateOutcome.CREATED;
    }
    if (r.equals("COLLISION")) {
      return CreateOutcome.COLLISION;
    }
    if (r.startsWith("EXISTING:")) {
      return CreateOutcome.EXISTING;
    }
    throw refusal(r, subject);
  }

  @Override
  public Optional<String> reservedUid(String modelName, String idempotencyKey) {
    byte[] uid =
        call("model " + q(modelName), () -> redis.get(b(reservation(modelName, idempotencyKey))));
    return Optional.ofNullable(s(uid));
  }

  @Override
  public void deleteVersion(String uid) {
    String r =
        script(
            "version " + q(uid), RedisRefitScripts.DELETE_VERSION, new String[] {versionKey(uid)});
    if (!r.equals("OK")) {
      throw refusal(r, "version " + q(uid));
    }
  }

  // ---- workers -------------------------------------------------------------------------------

  @Override
  public long registerWorker(WorkerRegistration w, long ttlMillis) {
    String subject = "worker " + q(w.getWorkerId());
    String r =
        script(
            subject,
            RedisRefitScripts.REGISTER_WORKER,
            new String[] {worker(w.getWorkerId())},
            b(w.getWorkerId()),
            b(Integer.toString(w.getRoleValue())),
            b(w.getModelName()),
            b(Long.toString(ttlMillis)),
            b(now()));
    return okExpiry(r, subject);
  }

  private static long okExpiry(String r, String subject) {
    if (!r.startsWith("OK:")) {
      throw refusal(r, subject);
    }
    return Long.parseLong(r.substring(3));
  }

  // ---- shards --------------------------------------------------------------------------------

  @Override
  public WeightVersionState publishShard(WeightVersionShard shard) {
    String v = versionKey(shard.getVersionId());
    String subject =
        RefitText.shardSubject(shard.getVersionId(), shard.getSourceSlotId(), shard.getWorkerId());
    String r =
        script(
            subject,
            RedisRefitScripts.PUBLISH_SHARD,
            new String[] {
              v,
              worker(shard.getWorkerId()),
              v + ":shards",
              v + ":coverage",
              v + ":expected-source-slots"
            },
            b(RefitBackend.publicationKey(shard.getWorkerId(), shard.getSourceSlotId())),
            shard.toByteArray(),
            b(shard.getSourceSlotId()),
            b(now()));
    if (!r.startsWith("OK:")) {
      throw refusal(r, subject);
    }
    return WeightVersionState.forNumber(Integer.parseInt(r.substring(3)));
  }

  private static WeightVersionShard parseShard(byte[] bytes, String subject) {
    try {
      return WeightVersionShard.parseFrom(bytes);
    } catch (InvalidProtocolBufferException e) {
      throw RefitFailure.INTERNAL.raise(
          "invalid shard in Refit metadata: " + e.getMessage(), subject);
    }
  }

  @Override
  public Optional<List<WeightVersionShard>> shards(String versionId) {
    String subject = "version " + q(versionId);
    String v = versionKey(versionId);
    if (call(subject, () -> redis.exists(b(v))) == 0) {
      return Optional.empty();
    }
    List<WeightVersionShard> out = new ArrayList<>();
    for (byte[] bytes : call(subject, () -> redis.hvals(b(v + ":shards")))) {
      out.add(parseShard(bytes, subject));
    }
    return Optional.of(out);
  }

  @Override
  public Optional<WeightVersionShard> shard(
      String versionId, String workerId, String sourceSlotId) {
    String subject = "version " + q(versionId) + ", slot " + q(sourceSlotId);
    byte[] bytes =
        call(
            subject,
            () ->
                redis.hget(
                    b(versionKey(versionId) + ":shards"),
                    b(RefitBackend.publicationKey(workerId, sourceSlotId))));
    return bytes == null ? Optional.empty() : Optional.of(parseShard(bytes, subject));
  }

  @Override
  public void deleteShard(WeightVersionShard expected) {
    String v = versionKey(expected.getVersionId());
    String subject =
        RefitText.shardSubject(
            expected.getVersionId(), expected.getSourceSlotId(), expected.getWorkerId());
    String r =
        script(
            subject,
            RedisRefitScripts.DELETE_SHARD,
            new String[] {v, worker(expected.getWorkerId()), v + ":shards", v + ":leases"},
            b(RefitBackend.publicationKey(expected.getWorkerId(), expected.getSourceSlotId())),
            expected.toByteArray(),
            b(now()));
    if (!r.equals("DELETED")) {
      throw refusal(r, subject);
    }
  }

  // ---- leases --------------------------------------------------------------------------------

  @Override
  public long registerLease(String leaseId, String versionId, String workerId, long ttlMillis) {
    String v = versionKey(versionId);
    String subject =
        "version " + q(versionId) + ", worker " + q(workerId) + ", lease " + q(leaseId);
    String r =
        script(
            subject,
            RedisRefitScripts.REGISTER_LEASE,
            new String[] {v, worker(workerId), v + ":lease:" + leaseId, v + ":leases"},
            b(leaseId),
            b(versionId),
            b(workerId),
            b(Long.toString(ttlMillis)),
            b(now()));
    return okExpiry(r, subject);
  }

  @Override
  public Optional<VersionLease> lease(String versionId, String leaseId) {
    String subject = "version " + q(versionId) + ", lease " + q(leaseId);
    byte[][] keys = {b(versionKey(versionId) + ":lease:" + leaseId)};
    List<Object> r =
        call(
            subject,
            () -> redis.eval(RedisRefitScripts.READ_LEASE, ScriptOutputType.MULTI, keys, b(now())));
    if (r.isEmpty()) {
      return Optional.empty();
    }
    return Optional.of(
        VersionLease.newBuilder()
            .setLeaseId(s(r.get(0)))
            .setVersionId(s(r.get(1)))
            .setWorkerId(s(r.get(2)))
            .setExpiresAtUnixMs(Long.parseLong(s(r.get(3))))
            .build());
  }

  @Override
  public boolean deleteLease(String versionId, String leaseId, String workerId) {
    String v = versionKey(versionId);
    String subject = "version " + q(versionId) + ", lease " + q(leaseId);
    String r =
        script(
            subject,
            RedisRefitScripts.DELETE_LEASE,
            new String[] {v + ":lease:" + leaseId, v + ":leases"},
            b(leaseId),
            b(versionId),
            b(workerId),
            b(now()));
    return switch (r) {
      case "DELETED" -> true;
      case "NOT_FOUND" -> false;
      default -> throw refusal(r, subject + " (asked by worker " + q(workerId) + ")");
    };
  }

  /** Closes the connection; idempotent. */
  @Override
  public void close() {
    if (closed.compareAndSet(false, true)) {
      connection.close();
      client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
    }
  }
}
