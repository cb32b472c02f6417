package dev.mx.cli;

import dev.mx.api.transport.TransportProvider;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** Lists every transport on the class path, whether it is usable here, and why not. */
@Command(
    name = "transports",
    mixinStandardHelpOptions = true,
    description = {
      "List the transports found on the class path, their priority and availability.",
      "The one 'auto' picks is the available transport with the highest priority;",
      "override with -Dmx.transport=NAME or MX_TRANSPORT=NAME."
    })
final class TransportsCommand implements Callable<Integer> {

  @Option(names = "--json", description = "Print a JSON list instead of a table.")
  boolean json;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() {
    var registry = TransportProvider.registry();
    List<TransportProvider> all = registry.providers();
    if (json) {
      List<Map<String, Object>> out = new ArrayList<>();
      for (TransportProvider p : all) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("name", p.name());
        m.put("available", p.isAvailable());
        m.put("priority", p.priority());
        Throwable cause = p.isAvailable() ? null : p.unavailabilityCause();
        m.put("unavailability_cause", cause == null ? null : cause.toString());
        m.put("artifact", p.artifact());
        out.add(m);
      }
      Json.print(spec.commandLine().getOut(), out);
      return 0;
    }
    Table t = new Table("NAME", "AVAILABLE", "PRIORITY", "ARTIFACT", "CAUSE");
    for (TransportProvider p : all) {
      Throwable cause = p.isAvailable() ? null : p.unavailabilityCause();
      t.row(
          p.name(),
          p.isAvailable() ? "yes" : "no",
          p.priority(),
          p.artifact(),
          cause == null ? "" : cause.toString());
    }
    t.print(spec.commandLine().getOut());
    String requested = registry.requestedName();
    spec.commandLine().getOut().println();
    spec.commandLine()
        .getOut()
        .println(
            "auto selects: "
                + registry.select().name()
                + (requested == null ? "" : " (override '" + requested + "')"));
    return 0;
  }
}
