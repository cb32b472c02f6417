package dev.mx.rl;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.common.util.concurrent.ListenableFuture;
import com.google.protobuf.Message;
import dev.mx.rl.client.RefitRequests;
import dev.mx.rl.proto.CreateWeightVersionRequest;
import dev.mx.rl.proto.CreateWeightVersionShardRequest;
import dev.mx.rl.proto.CreateWeightVersionShardResponse;
import dev.mx.rl.proto.DeleteWeightVersionRequest;
import dev.mx.rl.proto.GetWeightVersionRequest;
import dev.mx.rl.proto.RefitServiceGrpc;
import dev.mx.rl.proto.RegisterWorkerRequest;
import dev.mx.rl.proto.VersionLease;
import dev.mx.rl.proto.WeightPayloadFormat;
import dev.mx.rl.proto.WeightVersion;
import dev.mx.rl.proto.WeightVersionShard;
import dev.mx.rl.proto.WeightVersionState;
import dev.mx.rl.proto.WorkerRegistration;
import dev.mx.rl.proto.WorkerRole;
import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.ClientCalls;
import java.io.ByteArrayInputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * SPEC.md's scenarios (section 12 tests A-D, the error catalogue of section 10, the golden
 * lifecycle) against a real {@link RefitServer} over loopback gRPC; subclasses give the backend.
 * Two servers ("replicas" A and B) share the backend's records. Time is a {@link TestClock} the
 * tests move.
 */
abstract class AbstractRefitServiceTest {
  static final String SLOT0 = "publisher:global-rank:0";
  static final String SLOT1 = "publisher:global-rank:1";

  // TTLs that a test needs live stay at 10 s or more: Redis also collects records by PEXPIRE in
  // real time, so a shorter one could vanish on a loaded machine while the test clock says live.

  /** The backend of replica A. */
  abstract RefitBackend newBackend(RefitClock clock);

  /** A backend for replica B over the same records as {@code first}. */
  abstract RefitBackend replicaOf(RefitBackend first, RefitClock clock);

  TestClock clock;
  String run;
  String model;
  RefitBackend backendA;
  RefitBackend backendB;
  RefitServer serverA;
  RefitServer serverB;
  ManagedChannel channelA;
  ManagedChannel channelB;
  RefitServiceGrpc.RefitServiceBlockingStub a;
  RefitServiceGrpc.RefitServiceBlockingStub b;

  @BeforeEach
  void start() {
    clock = new TestClock(TestClock.GOLDEN_NOW);
    // Unique ids per test: a Redis backend's records outlive a test.
    run = UUID.randomUUID().toString().substring(0, 8);
    model = "test/model-" + run;
    backendA = newBackend(clock);
    backendB = replicaOf(backendA, clock);
    serverA = RefitServer.builder().port(0).backend(backendA).clock(clock).build();
    serverB = RefitServer.builder().port(0).backend(backendB).clock(clock).build();
    channelA = channel(serverA.port());
    channelB = channel(serverB.port());
    a = RefitServiceGrpc.newBlockingStub(channelA);
    b = RefitServiceGrpc.newBlockingStub(channelB);
  }

  static ManagedChannel channel(int port) {
    return NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
  }

  @AfterEach
  void stop() throws InterruptedException {
    for (ManagedChannel c : new ManagedChannel[] {channelA, channelB}) {
      if (c != null) {
        c.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      }
    }
    for (RefitServer s : new RefitServer[] {serverA, serverB}) {
      if (s != null) {
        s.close();
      }
    }
    if (backendB != null && backendB != backendA) {
      backendB.close();
    }
    if (backendA != null) {
      backendA.close();
    }
  }

  // ---- helpers -------------------------------------------------------------------------------

  String id(String name) {
    return name + "-" + run;
  }

  static StatusRuntimeException refused(Status.Code code, String message, Executable call) {
    StatusRuntimeException e = assertThrows(StatusRuntimeException.class, call);
    assertEquals(code, e.getStatus().getCode(), "status of: " + e.getStatus());
    assertEquals(message, e.getStatus().getDescription());
    return e;
  }

  static String subject(StatusRuntimeException e) {
    return e.getTrailers() == null ? null : e.getTrailers().get(RefitException.SUBJECT_KEY);
  }

  WorkerRegistration register(
      RefitServiceGrpc.RefitServiceBlockingStub via, String worker, WorkerRole role, int ttl) {
    return via.registerWorker(RefitRequests.registerWorker(worker, role, model, ttl));
  }

  /** A live worker of another model: the model checks refuse it. */
  String foreignWorker(WorkerRole role) {
    String foreign = id("foreign");
    a.registerWorker(RefitRequests.registerWorker(foreign, role, model + "-other", 60));
    return foreign;
  }

  CreateWeightVersionRequest.Builder versionRequest(String key, String... slots) {
    return CreateWeightVersionRequest.newBuilder()
        .setModelName(model)
        .setIdempotencyKey(key)
        .setPayloadFormat(WeightPayloadFormat.WEIGHT_PAYLOAD_FORMAT_FULL_TENSOR)
        .addAllExpectedSourceSlots(List.of(slots));
  }

  WeightVersion create(String key, String... slots) {
    return a.createWeightVersion(versionRequest(key, slots).build());
  }

  /** SPEC.md section 12's shard helper. */
  static WeightVersionShard shard(String version, String slot, String worker) {
    return WeightVersionShard.newBuilder()
        .setVersionId(version)
        .setSourceSlotId(slot)
        .setWorkerId(worker)
        .setTensorCount(10)
        .setTotalBytes(1024)
        .setManifestDigest("digest-" + slot)
        .setManifestEndpoint(worker + ":9000")
        .setTransport("NIXL")
        .build();
  }

  static CreateWeightVersionShardResponse publish(
      RefitServiceGrpc.RefitServiceBlockingStub via, WeightVersionShard s) {
    return via.createWeightVersionShard(
        CreateWeightVersionShardRequest.newBuilder().setShard(s).build());
  }

  static ListenableFuture<CreateWeightVersionShardResponse> publishAsync(
      ManagedChannel via, WeightVersionShard s) {
    return RefitServiceGrpc.newFutureStub(via)
        .createWeightVersionShard(CreateWeightVersionShardRequest.newBuilder().setShard(s).build());
  }

  static WeightVersion get(RefitServiceGrpc.RefitServiceBlockingStub via, String uid) {
    return via.getWeightVersion(RefitRequests.getVersion(uid));
  }

  static WeightVersion delete(RefitServiceGrpc.RefitServiceBlockingStub via, String uid) {
    return via.deleteWeightVersion(RefitRequests.deleteVersion(uid));
  }

  static List<WeightVersionShard> list(RefitServiceGrpc.RefitServiceBlockingStub via, String v) {
    return via.listWeightVersionShards(RefitRequests.listShards(v)).getShardsList();
  }

  static VersionLease lease(
      RefitServiceGrpc.RefitServiceBlockingStub via, String version, String worker, int ttl) {
    return via.registerVersionLease(RefitRequests.registerLease(version, worker, ttl));
  }

  static boolean unlease(
      RefitServiceGrpc.RefitServiceBlockingStub via, String version, String lease, String worker) {
    return via.deleteVersionLease(RefitRequests.deleteLease(version, lease, worker)).getDeleted();
  }

  static boolean evict(
      RefitServiceGrpc.RefitServiceBlockingStub via, String version, String slot, String worker) {
    return via.deleteWeightVersionShard(RefitRequests.deleteShard(version, slot, worker))
        .getDeleted();
  }

  /** A READY version of one slot published by a fresh trainer; returns {uid, trainer}. */
  String[] readyVersion(String key) {
    String trainer = id("t-" + key);
    register(a, trainer, WorkerRole.WORKER_ROLE_TRAINER, 60);
    WeightVersion v = create(key, SLOT0);
    assertEquals(
        WeightVersionState.WEIGHT_VERSION_STATE_READY,
        publish(a, shard(v.getUid(), SLOT0, trainer)).getVersion().getState());
    return new String[] {v.getUid(), trainer};
  }

  // ---- SPEC.md section 12 test A
  // -----------------------------------------------------------------------

  @Test
  void versionBecomesReadyAcrossServerReplicas() throws Exception {
    // A.1
    HealthCheckResponse health =
        HealthGrpc.newBlockingStub(channelA)
            .check(HealthCheckRequest.newBuilder().setService(RefitServer.REFIT_SERVICE).build());
    assertEquals(HealthCheckResponse.ServingStatus.SERVING, health.getStatus());
    // A.2
    String wa = id("wa");
    String wb = id("wb");
    assertEquals(wa, register(a, wa, WorkerRole.WORKER_ROLE_TRAINER, 60).getWorkerId());
    assertEquals(wb, register(b, wb, WorkerRole.WORKER_ROLE_TRAINER, 60).getWorkerId());
    // A.3: the same key through both replicas at once yields one version
    CreateWeightVersionRequest req =
        versionRequest(id("key"), SLOT0, SLOT1).setVersionNumber(42).build();
    ListenableFuture<WeightVersion> viaA =
        RefitServiceGrpc.newFutureStub(channelA).createWeightVersion(req);
    ListenableFuture<WeightVersion> viaB =
        RefitServiceGrpc.newFutureStub(channelB).createWeightVersion(req);
    WeightVersion created = viaA.get(30, TimeUnit.SECONDS);
    assertEquals(created, viaB.get(30, TimeUnit.SECONDS));
    assertEquals(8, created.getUid().length());
    assertTrue(created.getUid().matches("[0-9a-f]{8}"), created.getUid());
    assertEquals(WeightVersionState.WEIGHT_VERSION_STATE_STAGING, created.getState());
    assertEquals(42, created.getVersionNumber());
    assertEquals(List.of(SLOT0, SLOT1), created.getExpectedSourceSlotsList());
    assertEquals(TestClock.GOLDEN_NOW, created.getCreatedAtUnixMs());
    assertEquals("", created.getLayoutSignature());
    String uid = created.getUid();
    // A.4
    assertEquals(created, get(b, uid));
    // A.5
    StatusRuntimeException e =
        refused(
            Status.Code.INVALID_ARGUMENT,
            "source_slot_id is not required by the weight version",
            () -> publish(a, shard(uid, "publisher:global-rank:9", wa)));
    assertTrue(subject(e).contains("publisher:global-rank:9"), subject(e));
    // A.6: the two last slots at once; one of them completes coverage
    ListenableFuture<CreateWeightVersionShardResponse> p0 =
        publishAsync(channelA, shard(uid, SLOT0, wa));
    ListenableFuture<CreateWeightVersionShardResponse> p1 =
        publishAsync(channelB, shard(uid, SLOT1, wb));
    CreateWeightVersionShardResponse r0 = p0.get(30, TimeUnit.SECONDS);
    CreateWeightVersionShardResponse r1 = p1.get(30, TimeUnit.SECONDS);
    assertEquals(shard(uid, SLOT0, wa), r0.getShard());
    assertEquals(shard(uid, SLOT1, wb), r1.getShard());
    assertTrue(
        r0.getVersion().getState() == WeightVersionState.WEIGHT_VERSION_STATE_READY
            || r1.getVersion().getState() == WeightVersionState.WEIGHT_VERSION_STATE_READY,
        "neither publication saw READY: "
            + r0.getVersion().getState()
            + ", "
            + r1.getVersion().getState());
    // A.7: identical re-publication is idempotent
    assertEquals(
        WeightVersionState.WEIGHT_VERSION_STATE_READY,
        publish(a, shard(uid, SLOT0, wa)).getVersion().getState());
    // A.8
    refused(
        Status.Code.ALREADY_EXISTS,
        "worker and source_slot_id already published different metadata",
        () -> publish(a, shard(uid, SLOT0, wa).toBuilder().setTotalBytes(2048).build()));
    // A.9
    assertEquals(WeightVersionState.WEIGHT_VERSION_STATE_READY, get(b, uid).getState());
    // A.10
    assertEquals(
        List.of(SLOT0, SLOT1),
        list(b, uid).stream().map(WeightVersionShard::getSourceSlotId).toList());
  }

  // ---- test B --------------------------------------------------------------------------------

  @Test
  void replacementWorkerCanPublishTheSameSourceSlot() {
    String original = id("original");
    String replacement = id("replacement");
    register(a, original, WorkerRole.WORKER_ROLE_TRAINER, 60);
    register(a, replacement, WorkerRole.WORKER_ROLE_TRAINER, 60);
    WeightVersion v = create(id("key"), SLOT0);
    assertFalse(v.hasVersionNumber());
    assertEquals(
        WeightVersionState.WEIGHT_VERSION_STATE_READY,
        publish(a, shard(v.getUid(), SLOT0, original)).getVersion().getState());
    assertEquals(
        WeightVersionState.WEIGHT_VERSION_STATE_READY,
        publish(a, shard(v.getUid(), SLOT0, replacement)).getVersion().getState());
    List<WeightVersionShard> shards = list(a, v.getUid());
    assertEquals(2, shards.size());
    assertEquals(
        List.of(original, replacement),
        shards.stream().map(WeightVersionShard::getWorkerId).toList());
    assertTrue(shards.stream().allMatch(s -> s.getSourceSlotId().equals(SLOT0)));
  }

  // ---- test C --------------------------------------------------------------------------------

  @Test
  void liveLeaseProtectsReleasingVersionShards() {
    // C.1
    String trainer = id("trainer");
    String g1 = id("g1");
    String g2 = id("g2");
    register(a, trainer, WorkerRole.WORKER_ROLE_TRAINER, 60);
    register(a, g1, WorkerRole.WORKER_ROLE_GENERATOR, 60);
    register(b, g2, WorkerRole.WORKER_ROLE_GENERATOR, 60);
    // C.2
    WeightVersion v =
        a.createWeightVersion(versionRequest(id("v43"), SLOT0).setVersionNumber(43).build());
    String uid = v.getUid();
    assertEquals(
        WeightVersionState.WEIGHT_VERSION_STATE_READY,
        publish(a, shard(uid, SLOT0, trainer)).getVersion().getState());
    // C.3: the same worker gets the same lease through either replica
    VersionLease l1 = lease(b, uid, g1, 60);
    assertEquals(VersionUids.leaseId(uid, g1), l1.getLeaseId());
    assertEquals(uid, l1.getVersionId());
    assertEquals(g1, l1.getWorkerId());
    assertEquals(TestClock.GOLDEN_NOW + 60_000, l1.getExpiresAtUnixMs());
    assertEquals(l1.getLeaseId(), lease(a, uid, g1, 60).getLeaseId());
    // C.4
    assertEquals(WeightVersionState.WEIGHT_VERSION_STATE_RELEASING, delete(a, uid).getState());
    // C.5: no new consumer while releasing
    refused(
        Status.Code.FAILED_PRECONDITION,
        "weight version does not accept this lease registration",
        () -> lease(b, uid, g2, 60));
    // C.6: the holder renews
    clock.advance(1000);
    assertEquals(TestClock.GOLDEN_NOW + 61_000, lease(b, uid, g1, 60).getExpiresAtUnixMs());
    // C.7
    StatusRuntimeException e =
        refused(
            Status.Code.FAILED_PRECONDITION,
            "weight version has an active lease",
            () -> evict(a, uid, SLOT0, trainer));
    assertTrue(subject(e).contains(l1.getLeaseId()), subject(e));
    // C.8
    assertTrue(unlease(b, uid, l1.getLeaseId(), g1));
    // C.9
    assertTrue(evict(a, uid, SLOT0, trainer));
    assertEquals(List.of(), list(a, uid));
    assertEquals(WeightVersionState.WEIGHT_VERSION_STATE_RELEASING, get(a, uid).getState());
    // C.10: an expired lease protects nothing and cannot be renewed
    WeightVersion v44 =
        a.createWeightVersion(versionRequest(id("v44"), SLOT0).setVersionNumber(44).build());
    publish(a, shard(v44.getUid(), SLOT0, trainer));
    lease(a, v44.getUid(), g1, 1);
    delete(a, v44.getUid());
    clock.advance(1250);
    refused(
        Status.Code.FAILED_PRECONDITION,
        "weight version does not accept this lease registration",
        () -> lease(a, v44.getUid(), g1, 60));
    assertTrue(evict(a, v44.getUid(), SLOT0, trainer));
  }

  @Test
  void aReplicaKilledMidStepLeavesTheOtherServingTheVersionItsShardsAndItsLease() throws Exception {
    String trainer = id("trainer");
    String g = id("g");
    register(a, trainer, WorkerRole.WORKER_ROLE_TRAINER, 60);
    register(a, g, WorkerRole.WORKER_ROLE_GENERATOR, 60);
    String uid = a.createWeightVersion(versionRequest(id("v50"), SLOT0).build()).getUid();
    publish(a, shard(uid, SLOT0, trainer));
    VersionLease held = lease(a, uid, g, 60);
    // Replica A goes away mid-step, with its clients' calls.
    serverA.close();
    StatusRuntimeException gone = assertThrows(StatusRuntimeException.class, () -> get(a, uid));
    assertEquals(Status.Code.UNAVAILABLE, gone.getStatus().getCode());
    // Replica B serves all of it: the version, its shard, the lease (renewed by its holder).
    assertEquals(WeightVersionState.WEIGHT_VERSION_STATE_READY, get(b, uid).getState());
    assertEquals(
        List.of(trainer), list(b, uid).stream().map(WeightVersionShard::getWorkerId).toList());
    assertEquals(held.getLeaseId(), lease(b, uid, g, 60).getLeaseId());
    delete(b, uid);
    refused(
        Status.Code.FAILED_PRECONDITION,
        "weight version has an active lease",
        () -> evict(b, uid, SLOT0, trainer));
    assertTrue(unlease(b, uid, held.getLeaseId(), g));
    assertTrue(evict(b, uid, SLOT0, trainer));
  }

  /** Raw bytes both ways, for calls no generated stub makes. */
  private static final MethodDescriptor.Marshaller<byte[]> BYTES =
      new MethodDescriptor.Marshaller<>() {
        @Override
        public java.io.InputStream stream(byte[] value) {
          return new ByteArrayInputStream(value);
        }

        @Override
        public byte[] parse(java.io.InputStream stream) {
          try {
            return stream.readAllBytes();
          } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
          }
        }
      };

  private static MethodDescriptor<byte[], byte[]> raw(String fullMethodName) {
    return MethodDescriptor.<byte[], byte[]>newBuilder()
        .setType(MethodDescriptor.MethodType.UNARY)
        .setFullMethodName(fullMethodName)
        .setRequestMarshaller(BYTES)
        .setResponseMarshaller(BYTES)
        .build();
  }

  @Test
  void aClientOfAnotherMajorVersionIsUnimplementedAndANewerMinorsUnknownFieldIsSkipped()
      throws Exception {
    byte[] request =
        RefitRequests.registerWorker(id("w"), WorkerRole.WORKER_ROLE_TRAINER, model, 60)
            .toByteArray();
    // Another major version names another service (its package carries the version).
    StatusRuntimeException e =
        assertThrows(
            StatusRuntimeException.class,
            () ->
                ClientCalls.blockingUnaryCall(
                    channelA,
                    raw("model_express.refit.v2.RefitService/RegisterWorker"),
                    CallOptions.DEFAULT,
                    request));
    assertEquals(Status.Code.UNIMPLEMENTED, e.getStatus().getCode());
    assertTrue(
        e.getStatus().getDescription().contains("v2.RefitService"), e.getStatus().toString());
    // A newer minor version adds fields: field 99 (varint 7) is skipped and the call served.
    byte[] newer = java.util.Arrays.copyOf(request, request.length + 3);
    newer[request.length] = (byte) 0x98; // tag (99 << 3) | 0, two-byte varint
    newer[request.length + 1] = 0x06;
    newer[request.length + 2] = 0x07;
    byte[] answer =
        ClientCalls.blockingUnaryCall(
            channelA,
            raw(RefitServer.REFIT_SERVICE + "/RegisterWorker"),
            CallOptions.DEFAULT,
            newer);
    WorkerRegistration registered = WorkerRegistration.parseFrom(answer);
    assertEquals(id("w"), registered.getWorkerId());
    assertEquals(model, registered.getModelName());
    // The server still serves after both.
    assertEquals(id("w"), register(b, id("w"), WorkerRole.WORKER_ROLE_TRAINER, 60).getWorkerId());
  }

  // ---- test D --------------------------------------------------------------------------------

  @Test
  void registerWorkerRefreshesLivenessAndExpiresWithoutRenewal() {
    String w = id("trainer");
    assertEquals(
        TestClock.GOLDEN_NOW + 1000,
        register(a, w, WorkerRole.WORKER_ROLE_TRAINER, 1).getExpiresAtUnixMs());
    assertEquals(
        TestClock.GOLDEN_NOW + 10_000,
        register(a, w, WorkerRole.WORKER_ROLE_TRAINER, 10).getExpiresAtUnixMs());
    clock.advance(5000);
    WeightVersion v1 = create(id("d1"), SLOT0);
    assertEquals(
        WeightVersionState.WEIGHT_VERSION_STATE_READY,
        publish(a, shard(v1.getUid(), SLOT0, w)).getVersion().getState());
    clock.advance(6000);
    WeightVersion v2 = create(id("d2"), SLOT0);
    StatusRuntimeException e =
        refused(
            Status.Code.FAILED_PRECONDITION,
            "worker registration is missing or expired",
            () -> publish(a, shard(v2.getUid(), SLOT0, w)));
    assertTrue(subject(e).contains(w), subject(e));
  }

  @Test
  void aWorkerExpiringExactlyNowIsExpired() {
    String w = id("trainer");
    register(a, w, WorkerRole.WORKER_ROLE_TRAINER, 2);
    WeightVersion v = create(id("k"), SLOT0);
    clock.advance(2000);
    refused(
        Status.Code.FAILED_PRECONDITION,
        "worker registration is missing or expired",
        () -> publish(a, shard(v.getUid(), SLOT0, w)));
  }

  // ---- workers -------------------------------------------------------------------------------

  @Test
  void registerWorkerValidatesInOrder() {
    refused(
        Status.Code.INVALID_ARGUMENT,
        "worker is required",
        () -> a.registerWorker(RegisterWorkerRequest.newBuilder().setTtlSeconds(5).build()));
    WorkerRegistration.Builder w =
        WorkerRegistration.newBuilder().setWorkerId("  \t").setModelName(model);
    // Registers w as it is when called: each step below changes one field of it.
    Executable registerW =
        () ->
            a.registerWorker(
                RegisterWorkerRequest.newBuilder().setWorker(w).setTtlSeconds(5).build());
    refused(Status.Code.INVALID_ARGUMENT, "worker.worker_id is required", registerW);
    w.setWorkerId(id("w")).setModelName("\u00a0");
    refused(Status.Code.INVALID_ARGUMENT, "worker.model_name is required", registerW);
    w.setModelName(model);
    refused(Status.Code.INVALID_ARGUMENT, "worker.role must be specified", registerW);
    w.setRoleValue(7);
    refused(Status.Code.INVALID_ARGUMENT, "worker.role must be specified", registerW);
    w.setRole(WorkerRole.WORKER_ROLE_TRAINER);
    refused(
        Status.Code.INVALID_ARGUMENT,
        "ttl_seconds must be greater than zero",
        () -> a.registerWorker(RegisterWorkerRequest.newBuilder().setWorker(w).build()));
  }

  @Test
  void registerWorkerEchoesTheRequestWithTheServersExpiry() {
    WorkerRegistration sent =
        WorkerRegistration.newBuilder()
            .setWorkerId(id("w"))
            .setRole(WorkerRole.WORKER_ROLE_GENERATOR)
            .setModelName(model)
            .setExpiresAtUnixMs(42)
            .build();
    WorkerRegistration got =
        a.registerWorker(
            RegisterWorkerRequest.newBuilder().setWorker(sent).setTtlSeconds(90).build());
    assertEquals(sent.toBuilder().setExpiresAtUnixMs(TestClock.GOLDEN_NOW + 90_000).build(), got);
  }

  @Test
  void aLiveWorkerIdCannotChangeRoleOrModelButIsFreeAfterExpiry() {
    String w = id("w");
    register(a, w, WorkerRole.WORKER_ROLE_TRAINER, 10);
    StatusRuntimeException e =
        refused(
            Status.Code.ALREADY_EXISTS,
            "worker_id is already registered with different metadata",
            () -> register(b, w, WorkerRole.WORKER_ROLE_GENERATOR, 10));
    assertTrue(subject(e).contains(w), subject(e));
    refused(
        Status.Code.ALREADY_EXISTS,
        "worker_id is already registered with different metadata",
        () ->
            a.registerWorker(
                RegisterWorkerRequest.newBuilder()
                    .setWorker(
                        WorkerRegistration.newBuilder()
                            .setWorkerId(w)
                            .setRole(WorkerRole.WORKER_ROLE_TRAINER)
                            .setModelName(model + "-other"))
                    .setTtlSeconds(10)
                    .build()));
    clock.advance(10_000);
    assertEquals(
        WorkerRole.WORKER_ROLE_GENERATOR,
        register(b, w, WorkerRole.WORKER_ROLE_GENERATOR, 10).getRole());
  }

  // ---- versions ------------------------------------------------------------------------------

  @Test
  void createWeightVersionValidatesInOrder() {
    refused(
        Status.Code.INVALID_ARGUMENT,
        "model_name is required",
        () -> a.createWeightVersion(versionRequest("k", SLOT0).setModelName(" ").build()));
    refused(
        Status.Code.INVALID_ARGUMENT,
        "idempotency_key is required",
        () -> a.createWeightVersion(versionRequest("", SLOT0).build()));
    refused(
        Status.Code.INVALID_ARGUMENT,
        "base_version_id must be omitted for FULL_TENSOR",
        () -> a.createWeightVersion(versionRequest("k", SLOT0).setBaseVersionId("").build()));
    refused(
        Status.Code.INVALID_ARGUMENT,
        "base_version_id is required for XOR_DELTA",
        () ->
            a.createWeightVersion(
                versionRequest("k", SLOT0)
                    .setPayloadFormat(WeightPayloadFormat.WEIGHT_PAYLOAD_FORMAT_XOR_DELTA)
                    .build()));
    refused(
        Status.Code.INVALID_ARGUMENT,
        "payload_format must be specified",
        () ->
            a.createWeightVersion(
                versionRequest("k", SLOT0)
                    .setPayloadFormat(WeightPayloadFormat.WEIGHT_PAYLOAD_FORMAT_UNSPECIFIED)
                    .build()));
    refused(
        Status.Code.INVALID_ARGUMENT,
        "payload_format must be specified",
        () -> a.createWeightVersion(versionRequest("k", SLOT0).setPayloadFormatValue(9).build()));
    refused(
        Status.Code.INVALID_ARGUMENT,
        "expected_source_slots must not be empty",
        () -> a.createWeightVersion(versionRequest("k").build()));
    refused(
        Status.Code.INVALID_ARGUMENT,
        "expected_source_slots entry is required",
        () -> a.createWeightVersion(versionRequest("k", SLOT0, "\n").build()));
    refused(
        Status.Code.INVALID_ARGUMENT,
        "expected_source_slots must not contain duplicates",
        () -> a.createWeightVersion(versionRequest("k", SLOT0, SLOT1, SLOT0).build()));
    // a duplicate before a blank entry: the duplicate is found first
    refused(
        Status.Code.INVALID_ARGUMENT,
        "expected_source_slots must not contain duplicates",
        () -> a.createWeightVersion(versionRequest("k", SLOT0, SLOT0, " ").build()));
  }

  @Test
  void idempotentReplayReturnsTheStoredVersionInItsCurrentStateAndAConflictIsRefused() {
    String[] rv = readyVersion(id("k"));
    // a replay after READY and after release returns the version as it is now
    WeightVersion replay = create(id("k"), SLOT0);
    assertEquals(rv[0], replay.getUid());
    assertEquals(WeightVersionState.WEIGHT_VERSION_STATE_READY, replay.getState());
    delete(a, rv[0]);
    assertEquals(
        WeightVersionState.WEIGHT_VERSION_STATE_RELEASING, create(id("k"), SLOT0).getState());
    // any field of the request that differs refuses the replay
    for (CreateWeightVersionRequest conflicting :
        List.of(
            versionRequest(id("k"), SLOT0).setVersionNumber(0).build(),
            versionRequest(id("k"), SLOT1).build(),
            versionRequest(id("k"), SLOT0, SLOT1).build())) {
      StatusRuntimeException e =
          refused(
              Status.Code.ALREADY_EXISTS,
              "idempotency_key was already used for a different WeightVersion",
              () -> a.createWeightVersion(conflicting));
      assertTrue(subject(e).contains(rv[0]), subject(e));
    }
    // the same key under another model is another version
    String other = model + "-other";
    WeightVersion o =
        a.createWeightVersion(versionRequest(id("k"), SLOT0).setModelName(other).build());
    assertFalse(o.getUid().equals(rv[0]));
    assertEquals(other, o.getModelName());
  }

  @Test
  void versionNumberZeroIsPresent() {
    WeightVersion v =
        a.createWeightVersion(versionRequest(id("k"), SLOT0).setVersionNumber(0).build());
    assertTrue(v.hasVersionNumber());
    assertTrue(get(b, v.getUid()).hasVersionNumber());
    WeightVersion absent = create(id("k2"), SLOT0);
    assertFalse(get(b, absent.getUid()).hasVersionNumber());
    assertFalse(get(b, absent.getUid()).hasBaseVersionId());
  }

  @Test
  void xorDeltaChecksItsBase() {
    CreateWeightVersionRequest.Builder xor =
        versionRequest(id("x"), SLOT0)
            .setPayloadFormat(WeightPayloadFormat.WEIGHT_PAYLOAD_FORMAT_XOR_DELTA);
    refused(
        Status.Code.NOT_FOUND,
        "weight version UID \"nope\\\"\\n\" was not found",
        () -> a.createWeightVersion(xor.setBaseVersionId("nope\"\n").build()));
    refused(
        Status.Code.NOT_FOUND,
        "weight version UID \"\" was not found",
        () -> a.createWeightVersion(xor.setBaseVersionId("").build()));
    WeightVersion staging = create(id("s"), SLOT0);
    refused(
        Status.Code.FAILED_PRECONDITION,
        "XOR_DELTA base version must be READY and have the same model_name",
        () -> a.createWeightVersion(xor.setBaseVersionId(staging.getUid()).build()));
    String[] ready = readyVersion(id("r"));
    refused(
        Status.Code.FAILED_PRECONDITION,
        "XOR_DELTA base version must be READY and have the same model_name",
        () ->
            a.createWeightVersion(
                xor.clone().setModelName(model + "-other").setBaseVersionId(ready[0]).build()));
    WeightVersion delta = a.createWeightVersion(xor.setBaseVersionId(ready[0]).build());
    assertEquals(ready[0], delta.getBaseVersionId());
    assertEquals(WeightPayloadFormat.WEIGHT_PAYLOAD_FORMAT_XOR_DELTA, delta.getPayloadFormat());
    // the base check runs before the replay: once the base left READY, the replay fails too
    delete(a, ready[0]);
    refused(
        Status.Code.FAILED_PRECONDITION,
        "XOR_DELTA base version must be READY and have the same model_name",
        () -> a.createWeightVersion(xor.setBaseVersionId(ready[0]).build()));
  }

  @Test
  void uidCollisionsExhaustAfterFiveAttempts() throws Exception {
    try (RefitServer fixed =
        RefitServer.builder()
            .backend(backendA)
            .clock(clock)
            .uids((r, i) -> "0000" + run.substring(0, 4))
            .build()) {
      ManagedChannel c = channel(fixed.port());
      try {
        RefitServiceGrpc.RefitServiceBlockingStub s = RefitServiceGrpc.newBlockingStub(c);
        assertEquals(
            "0000" + run.substring(0, 4),
            s.createWeightVersion(versionRequest(id("1"), SLOT0).build()).getUid());
        refused(
            Status.Code.RESOURCE_EXHAUSTED,
            "could not allocate a unique weight version ID",
            () -> s.createWeightVersion(versionRequest(id("2"), SLOT0).build()));
      } finally {
        c.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      }
    }
  }

  @Test
  void getAndDeleteWeightVersion() {
    refused(
        Status.Code.INVALID_ARGUMENT,
        "uid is required",
        () -> a.getWeightVersion(GetWeightVersionRequest.getDefaultInstance()));
    refused(
        Status.Code.NOT_FOUND,
        "weight version UID \"nonexistent-version\" was not found",
        () -> get(a, "nonexistent-version"));
    refused(
        Status.Code.INVALID_ARGUMENT,
        "uid is required",
        () -> a.deleteWeightVersion(DeleteWeightVersionRequest.newBuilder().setUid(" ").build()));
    refused(Status.Code.NOT_FOUND, "weight version was not found", () -> delete(a, id("none")));
    WeightVersion staging = create(id("k"), SLOT0);
    refused(
        Status.Code.FAILED_PRECONDITION,
        "only a READY weight version can be deleted",
        () -> delete(a, staging.getUid()));
    String[] ready = readyVersion(id("r"));
    WeightVersion released = delete(a, ready[0]);
    assertEquals(WeightVersionState.WEIGHT_VERSION_STATE_RELEASING, released.getState());
    assertEquals(released, delete(b, ready[0]));
  }

  // ---- shards --------------------------------------------------------------------------------

  @Test
  void publishValidatesInOrder() {
    refused(
        Status.Code.INVALID_ARGUMENT,
        "shard is required",
        () -> a.createWeightVersionShard(CreateWeightVersionShardRequest.getDefaultInstance()));
    WeightVersionShard full = shard("v", SLOT0, "w");
    String[][] fields = {
      {"version_id", "shard.version_id"},
      {"source_slot_id", "shard.source_slot_id"},
      {"worker_id", "shard.worker_id"},
      {"manifest_digest", "shard.manifest_digest"},
      {"manifest_endpoint", "shard.manifest_endpoint"},
      {"transport", "shard.transport"},
    };
    for (String[] f : fields) {
      WeightVersionShard missing =
          full.toBuilder()
              .setField(WeightVersionShard.getDescriptor().findFieldByName(f[0]), " ")
              .build();
      refused(Status.Code.INVALID_ARGUMENT, f[1] + " is required", () -> publish(a, missing));
    }
    refused(
        Status.Code.NOT_FOUND,
        "weight version UID \"" + id("none") + "\" was not found",
        () -> publish(a, shard(id("none"), SLOT0, "w")));
  }

  @Test
  void publishRefusesUnregisteredForeignModelAndReleasingVersions() {
    WeightVersion v = create(id("k"), SLOT0, SLOT1);
    refused(
        Status.Code.FAILED_PRECONDITION,
        "worker registration is missing or expired",
        () -> publish(a, shard(v.getUid(), SLOT0, id("ghost"))));
    String foreign = foreignWorker(WorkerRole.WORKER_ROLE_TRAINER);
    refused(
        Status.Code.FAILED_PRECONDITION,
        "worker and weight version model_name differ",
        () -> publish(a, shard(v.getUid(), SLOT0, foreign)));
    // the role is not checked: a generator of the same model may publish (SPEC.md section 15)
    String gen = id("gen");
    register(a, gen, WorkerRole.WORKER_ROLE_GENERATOR, 60);
    assertEquals(
        WeightVersionState.WEIGHT_VERSION_STATE_STAGING,
        publish(a, shard(v.getUid(), SLOT0, gen)).getVersion().getState());
    String[] ready = readyVersion(id("r"));
    delete(a, ready[0]);
    refused(
        Status.Code.FAILED_PRECONDITION,
        "weight version does not accept shard publication",
        () -> publish(a, shard(ready[0], SLOT0, ready[1])));
    // an identical re-publication is refused too once RELEASING
    refused(
        Status.Code.FAILED_PRECONDITION,
        "weight version does not accept shard publication",
        () -> publish(a, shard(ready[0], SLOT0, ready[1]).toBuilder().setTotalBytes(1).build()));
  }

  @Test
  void listSortsBySlotThenWorkerBytewiseAndKeepsExpiredPublishers() {
    refused(Status.Code.INVALID_ARGUMENT, "version_id is required", () -> list(a, ""));
    refused(
        Status.Code.NOT_FOUND,
        "weight version UID \"" + id("none") + "\" was not found",
        () -> list(a, id("none")));
    String[] slots = {"b", "a", "\u00e9", "Z"};
    WeightVersion v = create(id("k"), slots);
    String w1 = id("w1");
    String w2 = id("W2");
    register(a, w1, WorkerRole.WORKER_ROLE_TRAINER, 60);
    register(a, w2, WorkerRole.WORKER_ROLE_TRAINER, 60);
    for (String s : slots) {
      publish(a, shard(v.getUid(), s, w1));
    }
    publish(a, shard(v.getUid(), "a", w2));
    clock.advance(61_000);
    List<String> order = new ArrayList<>();
    for (WeightVersionShard s : list(b, v.getUid())) {
      order.add(s.getSourceSlotId() + "/" + s.getWorkerId());
    }
    assertEquals(List.of("Z/" + w1, "a/" + w2, "a/" + w1, "b/" + w1, "\u00e9/" + w1), order);
  }

  @Test
  void evictionRules() {
    String[] rv = readyVersion(id("k"));
    String uid = rv[0];
    String trainer = rv[1];
    refused(
        Status.Code.INVALID_ARGUMENT, "version_id is required", () -> evict(a, "", SLOT0, trainer));
    refused(
        Status.Code.INVALID_ARGUMENT,
        "source_slot_id is required",
        () -> evict(a, uid, "", trainer));
    refused(Status.Code.INVALID_ARGUMENT, "worker_id is required", () -> evict(a, uid, SLOT0, ""));
    refused(
        Status.Code.NOT_FOUND,
        "weight version shard not found",
        () -> evict(a, id("none"), SLOT0, trainer));
    refused(
        Status.Code.NOT_FOUND,
        "weight version shard not found",
        () -> evict(a, uid, SLOT0, id("other")));
    refused(
        Status.Code.FAILED_PRECONDITION,
        "weight version must be RELEASING before its shards can be deleted",
        () -> evict(a, uid, SLOT0, trainer));
    delete(a, uid);
    clock.advance(60_000);
    refused(
        Status.Code.FAILED_PRECONDITION,
        "worker registration is missing or expired",
        () -> evict(a, uid, SLOT0, trainer));
    register(a, trainer, WorkerRole.WORKER_ROLE_TRAINER, 60);
    assertTrue(evict(b, uid, SLOT0, trainer));
    // a second eviction is NOT_FOUND, never deleted=false
    refused(
        Status.Code.NOT_FOUND,
        "weight version shard not found",
        () -> evict(a, uid, SLOT0, trainer));
  }

  // ---- leases --------------------------------------------------------------------------------

  @Test
  void leaseRules() {
    String[] rv = readyVersion(id("k"));
    String uid = rv[0];
    String gen = id("gen");
    register(a, gen, WorkerRole.WORKER_ROLE_GENERATOR, 60);
    refused(Status.Code.INVALID_ARGUMENT, "version_id is required", () -> lease(a, "", gen, 5));
    refused(Status.Code.INVALID_ARGUMENT, "worker_id is required", () -> lease(a, uid, " ", 5));
    refused(
        Status.Code.INVALID_ARGUMENT,
        "ttl_seconds must be greater than zero",
        () -> lease(a, uid, gen, 0));
    refused(
        Status.Code.NOT_FOUND, "weight version was not found", () -> lease(a, id("none"), gen, 5));
    refused(
        Status.Code.FAILED_PRECONDITION,
        "worker registration is missing or expired",
        () -> lease(a, uid, id("ghost"), 5));
    refused(
        Status.Code.FAILED_PRECONDITION,
        "only a generator worker can hold a version lease",
        () -> lease(a, uid, rv[1], 5));
    String foreign = foreignWorker(WorkerRole.WORKER_ROLE_GENERATOR);
    refused(
        Status.Code.FAILED_PRECONDITION,
        "worker and weight version model_name differ",
        () -> lease(a, uid, foreign, 5));
    WeightVersion staging = create(id("s"), SLOT0);
    refused(
        Status.Code.FAILED_PRECONDITION,
        "weight version does not accept this lease registration",
        () -> lease(a, staging.getUid(), gen, 5));
    // acquire, then renew with a shorter TTL: the expiry moves back
    VersionLease l = lease(a, uid, gen, 30);
    assertTrue(l.getLeaseId().matches("[0-9a-f]{8}"), l.getLeaseId());
    assertEquals(TestClock.GOLDEN_NOW + 30_000, l.getExpiresAtUnixMs());
    assertEquals(TestClock.GOLDEN_NOW + 10_000, lease(b, uid, gen, 10).getExpiresAtUnixMs());
    // only the owner deletes it; an unknown lease is deleted=false, even on an unknown version
    StatusRuntimeException e =
        refused(
            Status.Code.FAILED_PRECONDITION,
            "version lease is owned by a different worker",
            () -> unlease(a, uid, l.getLeaseId(), rv[1]));
    assertTrue(subject(e).contains(l.getLeaseId()), subject(e));
    assertFalse(unlease(a, uid, "00000000", gen));
    assertFalse(unlease(a, id("none"), l.getLeaseId(), gen));
    refused(Status.Code.INVALID_ARGUMENT, "lease_id is required", () -> unlease(a, uid, "", gen));
    assertTrue(unlease(b, uid, l.getLeaseId(), gen));
    assertFalse(unlease(a, uid, l.getLeaseId(), gen));
    // an expired lease is gone: deleting it is deleted=false
    lease(a, uid, gen, 1);
    clock.advance(1000);
    assertFalse(unlease(a, uid, l.getLeaseId(), gen));
  }

  // ---- the recorded lifecycle ----------------------------------------------------------------

  /**
   * The 29 recorded calls replayed against this server with the recording's frozen clock and uid
   * rule: every status and message equals the recording, and every response is byte for byte the
   * recorded one; calls 018/019 go to a RefitWorkerService serving the golden manifests.
   */
  @Test
  void theRecordedLifecycleGivesTheRecordedAnswers() throws Exception {
    TestClock frozen = new TestClock(TestClock.GOLDEN_NOW);
    RefitBackend backend = newBackend(frozen);
    ManifestBook book = new ManifestBook();
    String v = "edf6993a";
    List<GoldenVectors.Call> calls = GoldenVectors.calls();
    String slot0 =
        calls.get(2).entry().get("request_fields").get("expected_source_slots").get(0).asText();
    String slot1 =
        calls.get(2).entry().get("request_fields").get("expected_source_slots").get(1).asText();
    assertEquals(
        "327dfe8585a3c90e7cec513ad2674a66c8e9e36fb0dcdf5ca510238bfed4aa02",
        book.put(v, slot0, GoldenVectors.manifest("megatron_tp0.json")));
    book.put(v, slot1, GoldenVectors.manifest("megatron_tp1.json"));
    Map<String, MethodDescriptor<?, ?>> methods = GoldenVectors.methods();
    try (RefitServer server =
        RefitServer.builder()
            .ownedBackend(backend)
            .manifests(book)
            .clock(frozen)
            .uids(VersionUids.deterministic())
            .build()) {
      ManagedChannel c = channel(server.port());
      try {
        for (GoldenVectors.Call call : calls) {
          byte[] answer = replay(c, methods.get(call.fullMethodName()), call);
          if (call.status().equals("OK")) {
            assertNotNull(answer, call + " was refused");
            assertArrayEquals(call.response(), answer, call + ": response bytes");
          }
        }
      } finally {
        c.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      }
    }
  }

  private static <Q, R> byte[] replay(
      ManagedChannel c, MethodDescriptor<Q, R> method, GoldenVectors.Call call) throws Exception {
    Q request = method.parseRequest(new ByteArrayInputStream(call.request()));
    try {
      R response = ClientCalls.blockingUnaryCall(c, method, CallOptions.DEFAULT, request);
      assertEquals("OK", call.status(), call + " succeeded");
      return ((Message) response).toByteArray();
    } catch (StatusRuntimeException e) {
      assertEquals(call.status(), e.getStatus().getCode().name(), call + ": " + e.getStatus());
      assertEquals(call.errorMessage(), e.getStatus().getDescription(), call + ": message");
      return null;
    }
  }
}
