package dev.mx.rl;

import com.google.protobuf.MessageLite;
import dev.mx.rl.proto.RegisterWorkerRequest;
import dev.mx.rl.proto.WorkerRole;
import io.grpc.ForwardingServerCall;
import io.grpc.ForwardingServerCallListener;
import io.grpc.Grpc;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import java.net.SocketAddress;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * What a RefitService server is asked for, as a {@link ServerInterceptor} for {@link
 * RefitServer.Builder#intercept}: calls, request plus response bytes (serialized message sizes) and
 * the time from each call's start to its close, per client connection and in total. Trainers'
 * re-registrations run on a timer, not per refit step, so they are counted apart ({@link
 * #heartbeats}). Issue 36's "through the central service per participant" figures are read from it
 * (the scale bench, the traffic test).
 */
public final class ServiceTraffic implements ServerInterceptor {

  /** Calls, bytes and call nanoseconds, growing. */
  public static final class Tally {
    private final AtomicLong calls = new AtomicLong();
    private final AtomicLong bytes = new AtomicLong();
    private final AtomicLong nanos = new AtomicLong();

    public long calls() {
      return calls.get();
    }

    public long bytes() {
      return bytes.get();
    }

    /** The calls' summed time from start to close (the server's time in them, waits included). */
    public long nanos() {
      return nanos.get();
    }

    private void add(long b, long n) {
      calls.incrementAndGet();
      bytes.addAndGet(b);
      nanos.addAndGet(n);
    }
  }

  private final Map<SocketAddress, Tally> byPeer = new ConcurrentHashMap<>();
  private final Tally total = new Tally();
  private final Tally heartbeats = new Tally();

  /** Every call but trainers' re-registrations. */
  public Tally total() {
    return total;
  }

  /** Trainers' (re-)registrations. */
  public Tally heartbeats() {
    return heartbeats;
  }

  /** The calls each client connection made, trainers' re-registrations left out. */
  public Map<SocketAddress, Tally> byPeer() {
    return byPeer;
  }

  /** Forgets the per-connection tallies (the totals keep growing). */
  public void clearPeers() {
    byPeer.clear();
  }

  @Override
  public <Q, R> ServerCall.Listener<Q> interceptCall(
      ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
    long start = System.nanoTime();
    SocketAddress peer = call.getAttributes().get(Grpc.TRANSPORT_ATTR_REMOTE_ADDR);
    AtomicLong bytes = new AtomicLong();
    boolean[] heartbeat = {false};
    ServerCall<Q, R> counted =
        new ForwardingServerCall.SimpleForwardingServerCall<>(call) {
          @Override
          public void sendMessage(R message) {
            bytes.addAndGet(((MessageLite) message).getSerializedSize());
            super.sendMessage(message);
          }

          @Override
          public void close(Status status, Metadata trailers) {
            long n = System.nanoTime() - start;
            if (heartbeat[0]) {
              heartbeats.add(bytes.get(), n);
            } else {
              total.add(bytes.get(), n);
              if (peer != null) {
                byPeer.computeIfAbsent(peer, a -> new Tally()).add(bytes.get(), n);
              }
            }
            super.close(status, trailers);
          }
        };
    return new ForwardingServerCallListener.SimpleForwardingServerCallListener<>(
        next.startCall(counted, headers)) {
      @Override
      public void onMessage(Q message) {
        heartbeat[0] =
            message instanceof RegisterWorkerRequest r
                && r.getWorker().getRole() == WorkerRole.WORKER_ROLE_TRAINER;
        bytes.addAndGet(((MessageLite) message).getSerializedSize());
        super.onMessage(message);
      }
    };
  }
}
