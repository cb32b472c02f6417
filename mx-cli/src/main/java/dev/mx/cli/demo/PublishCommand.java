package dev.mx.cli.demo;

import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code mx publish}: one trainer rank on this host. Fills its buffers with the generator's values
 * of {@code --step}, publishes them through {@code --metadata} and serves reads until interrupted.
 */
@Command(
    name = "publish",
    mixinStandardHelpOptions = true,
    sortOptions = false,
    description = {
      "Run one trainer rank: publish generator weights of one step and serve them until Ctrl-C.",
      "Use with 'mx receive' on other hosts, e.g. --metadata redis://host:6379 --transport ucx."
    })
public final class PublishCommand implements Callable<Integer> {

  @CommandLine.Mixin RoleOptions role;

  @Option(names = "--rank", required = true, description = "This trainer's global rank.")
  int rank;

  @Option(
      names = "--step",
      defaultValue = "0",
      description = "Generator step of the published weights (default ${DEFAULT-VALUE}).")
  long step;

  @Option(
      names = "--steps",
      description =
          "Publish this many weight versions (steps --step, --step+1, ...), one every"
              + " --interval seconds, then serve them until interrupted (docs/VERSIONS.md).")
  Integer steps;

  @Option(
      names = "--interval",
      defaultValue = "1",
      description = "Seconds between versions with --steps (default ${DEFAULT-VALUE}).")
  double interval;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() throws Exception {
    WorkerSpec ws = role.spec(spec, "trainer", rank);
    if (steps != null) {
      return VersionedTrainer.run(
          ws, step, steps, Workers.seconds(interval), spec.commandLine().getOut());
    }
    CountDownLatch stop = new CountDownLatch(1);
    try (PhaseTicker progress = new PhaseTicker("mx publish: rank " + rank + ": ", System.err);
        Worker w = Workers.create(ws)) {
      progress.phase("allocating and registering buffers");
      Map<String, Object> started = w.start();
      progress.phase(
          "writing, digesting and publishing step "
              + step
              + " ("
              + started.get("bytes")
              + " bytes, "
              + started.get("published_shards")
              + " shards)");
      Map<String, Object> stepped = w.step(step);
      progress.phase(
          String.format(
              java.util.Locale.ROOT,
              "step %d published (written in %.2f s, digested and published in %.2f s)",
              step,
              seconds(stepped, "fill_s"),
              seconds(stepped, "publish_s")));
      progress.close();
      Thread hook = new Thread(stop::countDown, "mx-publish-stop");
      Runtime.getRuntime().addShutdownHook(hook);
      spec.commandLine()
          .getOut()
          .println(
              "published trainer rank "
                  + rank
                  + " ("
                  + started.get("label")
                  + ", "
                  + started.get("published_shards")
                  + " shards, "
                  + started.get("bytes")
                  + " bytes) of step "
                  + step
                  + " as '"
                  + ws.identity()
                  + "' on "
                  + ws.metadata()
                  + " over "
                  + ws.transport()
                  + "; serving until interrupted");
      spec.commandLine().getOut().flush();
      stop.await();
    }
    return 0;
  }

  private static double seconds(Map<String, Object> metrics, String key) {
    return metrics.get(key) instanceof Number n ? n.doubleValue() : Double.NaN;
  }
}
