package dev.mx.cli.demo;

import dev.mx.api.error.NoProviderException;
import dev.mx.api.memory.MemoryOps;
import dev.mx.api.memory.MemoryOpsProvider;
import dev.mx.api.transport.MemoryKind;
import dev.mx.refit.memory.HostMemoryOps;
import picocli.CommandLine;

/**
 * {@code --device}: where the demo's weights live, and whether that memory can be used here,
 * decided before any worker starts (the memory-ops provider of a device kind answers with its
 * availability holder's cause).
 */
final class DeviceCheck {
  private DeviceCheck() {}

  /** The memory kind {@code --device} names; bad usage (exit 2) naming the option otherwise. */
  static MemoryKind kind(CommandLine.Model.CommandSpec cmd, String text) {
    try {
      return MemoryKind.parse(text == null ? "host" : text);
    } catch (IllegalArgumentException e) {
      throw new CommandLine.ParameterException(
          cmd.commandLine(), "--device '" + text + "': " + e.getMessage());
    }
  }

  /** The memory operations of {@code kind} (host memory: the CPU's). */
  static MemoryOps ops(MemoryKind kind) {
    return MemoryOpsProvider.forKind(kind, new HostMemoryOps());
  }

  /** Null when memory of {@code kind} can be used in this process, else one line saying why not. */
  static String unavailable(MemoryKind kind) {
    if (!kind.isDevice()) {
      return null;
    }
    try {
      ops(kind);
      return null;
    } catch (NoProviderException | IllegalArgumentException | UnsatisfiedLinkError e) {
      return "--device " + kind + ": " + oneLine(e.getMessage());
    }
  }

  private static String oneLine(String s) {
    return s == null ? "unavailable" : s.replaceAll("\\s*\\R\\s*", " ").strip();
  }
}
