package dev.mx.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.rl.proto.GetWeightVersionRequest;
import dev.mx.rl.proto.RefitServiceGrpc;
import dev.mx.rl.proto.RegisterWorkerRequest;
import dev.mx.rl.proto.WorkerRegistration;
import dev.mx.rl.proto.WorkerRole;
import dev.mx.testing.RedisExtension;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/** {@code mx serve} in its own process, called over gRPC as ModelExpress's clients would. */
class ServeCommandTest {
  private static final Pattern SERVING =
      Pattern.compile("serving RefitService on 127\\.0\\.0\\.1:(\\d+) \\(backend (\\S+)\\)");

  @RegisterExtension static final RedisExtension REDIS = new RedisExtension();

  @Test
  void servesRefitServiceOnThePrintedAddressUntilTerminated(@TempDir Path dir) throws Exception {
    servesUntilTerminated(dir, "memory:");
  }

  @Test
  void servesOverRedis(@TempDir Path dir) throws Exception {
    servesUntilTerminated(dir, REDIS.uri());
  }

  private static void servesUntilTerminated(Path dir, String backend) throws Exception {
    Process p = CliProcess.start(dir, "serve", "--port", "0", "--backend", backend);
    ManagedChannel channel = null;
    try {
      BufferedReader out =
          new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
      String line = out.readLine();
      assertNotNull(line, "mx serve printed nothing");
      Matcher m = SERVING.matcher(line);
      assertTrue(m.matches(), line);
      assertEquals(backend, m.group(2));
      channel =
          NettyChannelBuilder.forAddress("127.0.0.1", Integer.parseInt(m.group(1)))
              .usePlaintext()
              .build();
      assertEquals(
          HealthCheckResponse.ServingStatus.SERVING,
          HealthGrpc.newBlockingStub(channel)
              .check(
                  HealthCheckRequest.newBuilder()
                      .setService("model_express.refit.RefitService")
                      .build())
              .getStatus());
      RefitServiceGrpc.RefitServiceBlockingStub refit = RefitServiceGrpc.newBlockingStub(channel);
      WorkerRegistration w =
          refit.registerWorker(
              RegisterWorkerRequest.newBuilder()
                  .setWorker(
                      WorkerRegistration.newBuilder()
                          .setWorkerId("t0")
                          .setRole(WorkerRole.WORKER_ROLE_TRAINER)
                          .setModelName("m"))
                  .setTtlSeconds(30)
                  .build());
      assertEquals("t0", w.getWorkerId());
      assertTrue(w.getExpiresAtUnixMs() > System.currentTimeMillis(), "expiry " + w);
      StatusRuntimeException e =
          org.junit.jupiter.api.Assertions.assertThrows(
              StatusRuntimeException.class,
              () ->
                  refit.getWeightVersion(GetWeightVersionRequest.newBuilder().setUid("x").build()));
      assertEquals(Status.Code.NOT_FOUND, e.getStatus().getCode());
      assertEquals("weight version UID \"x\" was not found", e.getStatus().getDescription());
    } finally {
      if (channel != null) {
        channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      }
      p.destroy();
      assertTrue(p.waitFor(60, TimeUnit.SECONDS), "mx serve did not stop on SIGTERM");
    }
  }

  @Test
  void anUnknownBackendIsBadUsageNamingIt(@TempDir Path dir) throws Exception {
    CliProcess.Run r = CliProcess.run(dir, null, "serve", "--port", "0", "--backend", "etcd://x");
    CliProcess.assertBadUsage(r, "mx serve", "--backend must be memory: or redis://HOST:PORT");
  }

  @Test
  void helpExplainsBackendsAndTheAddressLine() {
    CliProcess.Run r = CliProcess.inProcess("serve", "--help");
    assertEquals(0, r.code(), r.err());
    for (String s :
        new String[] {
          "model_express.refit.RefitService", "--backend", "redis://", "--port", "HOST:PORT"
        }) {
      assertTrue(r.out().contains(s), s + " missing from:\n" + r.out());
    }
  }
}
