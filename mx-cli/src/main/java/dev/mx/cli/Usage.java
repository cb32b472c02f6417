package dev.mx.cli;

import dev.mx.cli.demo.OptionChecks;
import java.io.PrintWriter;
import java.util.List;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;

/**
 * The usage half of the exit-code contract (ARCHITECTURE §5.1): every bad option value exits 2 with
 * one line on stderr that names the option and says {@code try 'mx CMD --help'}, never the full
 * usage and never a stack trace; under {@code --json} the same error is also a JSON document on
 * stdout. Option values are checked ({@link OptionChecks}) before a command runs, so a bad one
 * never starts a child JVM.
 */
final class Usage {

  /** Options {@code mx publish} inherits from the job options but a trainer rank never reads. */
  static final List<String> RECEIVER_ONLY =
      List.of(
          "--inference",
          "--wire",
          "--verify",
          "--inference-dtype",
          "--quant-block",
          "--fp8-rounding",
          "--fp8-partial-blocks",
          "--quant-params");

  private Usage() {}

  /** True when {@code args} ask for JSON output (before any {@code --} end of options). */
  static boolean wantsJson(String... args) {
    for (String a : args) {
      if (a.equals("--")) {
        return false;
      }
      if (a.equals("--json")) {
        return true;
      }
    }
    return false;
  }

  static void install(CommandLine root, String... args) {
    boolean json = wantsJson(args);
    root.setParameterExceptionHandler(
        (ex, a) -> {
          CommandLine cmd = ex.getCommandLine();
          String name = cmd.getCommandSpec().qualifiedName(" ");
          String message = oneLine(ex.getMessage());
          PrintWriter err = cmd.getErr();
          err.println(name + ": error: " + message + " (try '" + name + " --help')");
          err.flush();
          if (json) {
            Failures.printJson(cmd, message);
          }
          return 2;
        });
    root.setExecutionStrategy(
        parsed -> {
          boolean help =
              parsed.asCommandLineList().stream()
                  .anyMatch(c -> c.isUsageHelpRequested() || c.isVersionHelpRequested());
          if (!help) {
            OptionChecks.check(parsed.asCommandLineList().getLast());
          }
          return new CommandLine.RunLast().execute(parsed);
        });
    CommandLine publish = root.getSubcommands().get("publish");
    if (publish != null) {
      hide(publish.getCommandSpec(), RECEIVER_ONLY);
    }
  }

  /**
   * Hides inherited options from a command's help; they keep their defaults, which the command
   * ignores.
   */
  private static void hide(CommandSpec spec, List<String> names) {
    for (String n : names) {
      OptionSpec o = spec.findOption(n);
      if (o != null && !o.hidden()) {
        spec.remove(o);
        spec.addOption(OptionSpec.builder(o).hidden(true).build());
      }
    }
  }

  private static String oneLine(String message) {
    if (message == null) {
      return "bad usage";
    }
    String first = message.strip().lines().findFirst().orElse("bad usage");
    return first.endsWith(".") ? first.substring(0, first.length() - 1) : first;
  }
}
