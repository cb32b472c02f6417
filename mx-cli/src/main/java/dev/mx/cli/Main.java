package dev.mx.cli;

import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * Entry point of {@code mx}. Exit codes (ARCHITECTURE §5.1): 0 success, 1 failed operation
 * (one-line error naming what failed), 2 bad usage.
 */
@Command(
    name = "mx",
    mixinStandardHelpOptions = true,
    versionProvider = Main.Version.class,
    description = {
      "mx moves model weights from trainer shards into inference shards (reshard refit):",
      "every inference rank pulls exactly the bytes it needs with one-sided reads,",
      "re-slices and casts them locally, verifies digests and installs atomically."
    },
    subcommands = {
      dev.mx.cli.demo.DemoCommand.class,
      dev.mx.cli.demo.PublishCommand.class,
      dev.mx.cli.demo.ReceiveCommand.class,
      dev.mx.cli.demo.CheckpointCommand.class,
      ServeCommand.class,
      TransportsCommand.class,
      PlanCommand.class,
      DigestCommand.class,
      BenchCommand.class,
      dev.mx.cli.demo.WorkerCommand.class,
      CommandLine.HelpCommand.class,
      // bash/zsh completion: source <(./mx generate-completion)
      picocli.AutoComplete.GenerateCompletion.class
    })
public final class Main implements Callable<Integer> {

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  /** {@code mx} without a command is bad usage: the usage on stderr, exit 2. */
  @Override
  public Integer call() {
    spec.commandLine().usage(spec.commandLine().getErr());
    return 2;
  }

  public static void main(String[] args) {
    if (Usage.wantsJson(args)) {
      // Native libraries (UCX) write their logs to fd 1; keep the JSON document alone on the real
      // stdout.
      NativeStdout.divertToStderr();
    }
    System.exit(execute(args));
  }

  /** Runs the command line and returns the exit code (used by tests). */
  public static int execute(String... args) {
    CommandLine cl = new CommandLine(new Main());
    Usage.install(cl, args);
    boolean json = Usage.wantsJson(args);
    cl.setExecutionExceptionHandler((ex, cmd, parsed) -> Failures.report(ex, cmd, json));
    return cl.execute(args);
  }

  /** Reads the version Maven filtered into the jar. */
  static final class Version implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() throws IOException {
      Properties p = new Properties();
      try (InputStream in = Main.class.getResourceAsStream("/mx-version.properties")) {
        if (in != null) {
          p.load(in);
        }
      }
      return new String[] {
        "mx " + p.getProperty("version", "unknown"),
        "Java " + Runtime.version() + " (" + System.getProperty("java.vendor") + ")"
      };
    }
  }
}
