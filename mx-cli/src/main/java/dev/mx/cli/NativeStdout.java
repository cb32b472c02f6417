package dev.mx.cli;

import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import org.slf4j.LoggerFactory;

/**
 * Keeps {@code --json} documents alone on stdout although native libraries (UCX, NIXL) print their
 * logs to file descriptor 1, which Java cannot intercept. At start the real stdout is duplicated to
 * a new descriptor and descriptor 1 is pointed at stderr; {@link System#out} then writes to the
 * duplicate. Whatever native code writes afterwards lands on stderr with the logs. Where that is
 * impossible (no native access, not a POSIX libc) nothing changes and the reason is logged.
 */
final class NativeStdout {
  private NativeStdout() {}

  /**
   * Diverts descriptor 1 to stderr and points {@link System#out} at the real stdout; idempotent
   * enough for main.
   */
  static void divertToStderr() {
    try {
      Linker linker = Linker.nativeLinker();
      MethodHandle dup =
          linker.downcallHandle(
              linker.defaultLookup().find("dup").orElseThrow(),
              FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
      MethodHandle dup2 =
          linker.downcallHandle(
              linker.defaultLookup().find("dup2").orElseThrow(),
              FunctionDescriptor.of(
                  ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
      MethodHandle write =
          linker.downcallHandle(
              linker.defaultLookup().find("write").orElseThrow(),
              FunctionDescriptor.of(
                  ValueLayout.JAVA_LONG,
                  ValueLayout.JAVA_INT,
                  ValueLayout.ADDRESS,
                  ValueLayout.JAVA_LONG));
      System.out.flush();
      int saved = (int) dup.invokeExact(1);
      if (saved < 0) {
        throw new IOException("dup(1) failed");
      }
      if ((int) dup2.invokeExact(2, 1) < 0) {
        throw new IOException("dup2(2, 1) failed");
      }
      System.setOut(
          new PrintStream(new FdOutputStream(saved, write), true, StandardCharsets.UTF_8));
    } catch (Throwable t) {
      LoggerFactory.getLogger(NativeStdout.class)
          .debug(
              "native output stays on stdout: cannot divert file descriptor 1 ({})", t.toString());
    }
  }

  /** Writes to a raw file descriptor through libc {@code write}, looping over partial writes. */
  private static final class FdOutputStream extends OutputStream {
    private final int fd;
    private final MethodHandle write;

    FdOutputStream(int fd, MethodHandle write) {
      this.fd = fd;
      this.write = write;
    }

    @Override
    public void write(int b) throws IOException {
      write(new byte[] {(byte) b}, 0, 1);
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      try (Arena arena = Arena.ofConfined()) {
        MemorySegment buf = arena.allocate(Math.max(len, 1));
        MemorySegment.copy(b, off, buf, ValueLayout.JAVA_BYTE, 0, len);
        long done = 0;
        while (done < len) {
          long n;
          try {
            n = (long) write.invokeExact(fd, buf.asSlice(done), (long) (len - done));
          } catch (Throwable t) {
            throw new IOException("write to stdout failed", t);
          }
          if (n < 0) {
            throw new IOException("write to stdout (descriptor " + fd + ") failed");
          }
          done += n;
        }
      }
    }
  }
}
