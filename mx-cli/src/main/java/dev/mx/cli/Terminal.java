package dev.mx.cli;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.Optional;

/**
 * Whether a standard stream is a terminal, asked of the C library ({@code isatty}). Java's {@code
 * System.console()} cannot tell: since Java 22 it returns a console even when the output is a file
 * or a pipe, and it never speaks of stderr, where progress bars are drawn. A bar's escape codes
 * written into a log file are noise.
 */
public final class Terminal {
  /** File descriptor 2. */
  public static final int STDERR = 2;

  private static final Optional<MethodHandle> ISATTY =
      Linker.nativeLinker()
          .defaultLookup()
          .find("isatty")
          .map(
              f ->
                  Linker.nativeLinker()
                      .downcallHandle(
                          f, FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT)));

  private Terminal() {}

  /** True when {@code fd} is a terminal; false when it is not or the C library cannot say. */
  public static boolean isTerminal(int fd) {
    if (ISATTY.isEmpty()) {
      return false;
    }
    try {
      return (int) ISATTY.get().invokeExact(fd) == 1;
    } catch (Throwable e) {
      return false;
    }
  }

  /**
   * Prints {@code terminal} or {@code not a terminal} for fd 2 (what the tests run under a pty).
   */
  public static void main(String[] args) {
    System.out.println(isTerminal(STDERR) ? "terminal" : "not a terminal");
  }
}
