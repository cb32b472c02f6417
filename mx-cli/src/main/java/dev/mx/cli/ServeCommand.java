package dev.mx.cli;

import dev.mx.rl.RefitBackend;
import dev.mx.rl.RefitBackends;
import dev.mx.rl.RefitClock;
import dev.mx.rl.RefitServer;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code mx serve}: ModelExpress's RefitService (the RL control plane) until SIGTERM or Ctrl-C. */
@Command(
    name = "serve",
    mixinStandardHelpOptions = true,
    description = {
      "Serve ModelExpress's RL control plane (model_express.refit.RefitService) over plaintext gRPC.",
      "It keeps weight versions (STAGING -> READY when every expected source slot has a shard ->",
      "RELEASING), worker registrations with a TTL, shard records and version leases, with the reference",
      "server's status codes and messages. ModelExpress's Python clients and mx processes use it",
      "alike; grpc.health.v1.Health reports the service SERVING.",
      "",
      "--backend memory: keeps everything in this process (lost when it exits);",
      "--backend redis://host:port keeps it in Redis, where several `mx serve` replicas over one",
      "Redis behave as one server (every check-and-write is one Lua script).",
      "",
      "Prints 'serving RefitService on HOST:PORT (backend SPEC)' on stdout once it listens",
      "(with --port 0, the port picked); runs until SIGTERM or Ctrl-C."
    })
final class ServeCommand implements Callable<Integer> {
  private static final Logger LOG = LoggerFactory.getLogger(ServeCommand.class);

  @Option(
      names = "--port",
      defaultValue = "8001",
      description = "TCP port to listen on; 0 picks a free one (default: ${DEFAULT-VALUE}).")
  int port;

  @Option(
      names = "--host",
      defaultValue = "127.0.0.1",
      description =
          "Address to bind (default: ${DEFAULT-VALUE}); 0.0.0.0 serves other hosts (no TLS, no"
              + " auth: only on a trusted network).")
  String host;

  @Option(
      names = "--backend",
      defaultValue = "memory:",
      paramLabel = "memory:|redis://HOST:PORT",
      description = "Where the records live (default: ${DEFAULT-VALUE}).")
  String backend;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() throws InterruptedException {
    if (port < 0 || port > 65535) {
      throw new CommandLine.ParameterException(
          spec.commandLine(), "--port must be 0..65535, got " + port);
    }
    if (!backend.equals("memory:") && !backend.startsWith("redis://")) {
      throw new CommandLine.ParameterException(
          spec.commandLine(),
          "--backend must be memory: or redis://HOST:PORT, got '" + backend + "'");
    }
    RefitBackend store = RefitBackends.open(backend, RefitClock.system());
    RefitServer server;
    try {
      server = RefitServer.builder().host(host).port(port).ownedBackend(store).build();
    } catch (RuntimeException e) {
      store.close();
      throw e;
    }
    CountDownLatch stopped = new CountDownLatch(1);
    Thread hook =
        new Thread(
            () -> {
              LOG.info("stopping RefitService on {}", server.address());
              server.close();
              stopped.countDown();
            },
            "mx-serve-shutdown");
    Runtime.getRuntime().addShutdownHook(hook);
    spec.commandLine()
        .getOut()
        .println(
            "serving RefitService on " + server.address() + " (backend " + store.describe() + ")");
    spec.commandLine().getOut().flush();
    server.awaitTermination();
    stopped.await();
    return 0;
  }
}
