package dev.mx.transport.ucx;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * Blocks on a UCX worker's event file descriptor with {@code poll(2)} and a timeout: jucx's own
 * wait has no timeout, and a waiter that can miss a wake-up must never sleep for long.
 */
@SuppressWarnings("restricted") // calling native code is what this class is for
final class UcxEventWait {
  private static final MethodHandle POLL =
      Linker.nativeLinker()
          .downcallHandle(
              Linker.nativeLinker().defaultLookup().find("poll").orElseThrow(),
              FunctionDescriptor.of(
                  ValueLayout.JAVA_INT,
                  ValueLayout.ADDRESS,
                  ValueLayout.JAVA_LONG,
                  ValueLayout.JAVA_INT));
  private static final short POLLIN = 1;

  private UcxEventWait() {}

  /**
   * Waits until {@code fd} is readable or {@code timeoutMillis} pass (an interrupted poll just
   * returns).
   */
  static void await(int fd, int timeoutMillis) {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment pollfd =
          a.allocate(8, 4); // struct pollfd { int fd; short events; short revents; }
      pollfd.set(ValueLayout.JAVA_INT, 0, fd);
      pollfd.set(ValueLayout.JAVA_SHORT, 4, POLLIN);
      int ignored = (int) POLL.invokeExact(pollfd, 1L, timeoutMillis);
    } catch (Throwable t) {
      throw new IllegalStateException("poll(2) on UCX event fd " + fd + " failed", t);
    }
  }
}
