package dev.mx.rl;

import dev.mx.rl.proto.RefitServiceGrpc;
import io.grpc.MethodDescriptor;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** RefitService over gRPC: each call runs on {@link RefitControlPlane} and answers its outcome. */
final class RefitServiceImpl {
  private static final Logger LOG = LoggerFactory.getLogger(RefitServiceImpl.class);

  private RefitServiceImpl() {}

  static <Q, R> void answer(String rpc, Q request, StreamObserver<R> out, Function<Q, R> handler) {
    R response;
    try {
      response = handler.apply(request);
    } catch (RefitException e) {
      LOG.debug("{} refused: {}", rpc, e.getMessage());
      out.onError(e.toStatus());
      return;
    } catch (RuntimeException e) {
      LOG.warn("{} failed", rpc, e);
      out.onError(
          Status.INTERNAL
              .withDescription(String.valueOf(e.getMessage()))
              .withCause(e)
              .asException());
      return;
    }
    out.onNext(response);
    out.onCompleted();
  }

  /**
   * Every RefitService method bound to its step of the control plane, one line each (the generated
   * stub's per-method overrides would repeat the same delegation nine times).
   */
  static ServerServiceDefinition definition(RefitControlPlane plane) {
    ServerServiceDefinition.Builder b =
        ServerServiceDefinition.builder(RefitServiceGrpc.getServiceDescriptor());
    bind(b, RefitServiceGrpc.getCreateWeightVersionMethod(), plane::createVersion);
    bind(b, RefitServiceGrpc.getGetWeightVersionMethod(), plane::getVersion);
    bind(b, RefitServiceGrpc.getDeleteWeightVersionMethod(), plane::deleteVersion);
    bind(b, RefitServiceGrpc.getRegisterWorkerMethod(), plane::registerWorker);
    bind(b, RefitServiceGrpc.getCreateWeightVersionShardMethod(), plane::publishShard);
    bind(b, RefitServiceGrpc.getListWeightVersionShardsMethod(), plane::listShards);
    bind(b, RefitServiceGrpc.getDeleteWeightVersionShardMethod(), plane::deleteShard);
    bind(b, RefitServiceGrpc.getRegisterVersionLeaseMethod(), plane::registerLease);
    bind(b, RefitServiceGrpc.getDeleteVersionLeaseMethod(), plane::deleteLease);
    return b.build();
  }

  private static <Q, R> void bind(
      ServerServiceDefinition.Builder b, MethodDescriptor<Q, R> method, Function<Q, R> handler) {
    String rpc = method.getBareMethodName();
    b.addMethod(
        method, ServerCalls.asyncUnaryCall((request, out) -> answer(rpc, request, out, handler)));
  }
}
