package dev.mx.digest;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A Linux read lease on a file ({@code fcntl(F_SETLEASE, F_RDLCK)}), which makes mapping it safe:
 * while the lease is held, another process that truncates the file or opens it for writing blocks
 * (up to {@code /proc/sys/fs/lease-break-time} seconds) until the holder lets go, so the mapping
 * cannot lose its pages under the reader, which would kill the JVM with SIGBUS (its SIMD loops
 * fault where no Java exception can be raised). The holder sees the pending break ({@link
 * #broken()}) between chunks, stops reading the mapping and releases.
 *
 * <p>The break is signalled with SIGURG, whose default action is to ignore it: the default SIGIO
 * would end the process.
 */
@SuppressWarnings("restricted") // calling libc is what this class is for
final class FileLease implements AutoCloseable {
  private static final int O_RDONLY = 0;
  private static final int F_SETSIG = 10;
  private static final int F_SETLEASE = 1024;
  private static final int F_GETLEASE = 1025;
  private static final int F_RDLCK = 0;
  private static final int F_UNLCK = 2;
  private static final int SIGURG = 23;

  /** The shortest lease-break time mapping relies on: a chunk is digested far within it. */
  static final long MIN_BREAK_SECONDS = 1;

  private static final Linker LINKER = Linker.nativeLinker();
  private static final StructLayout CALL_STATE = Linker.Option.captureStateLayout();
  private static final VarHandle ERRNO =
      CALL_STATE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
  private static final MethodHandle OPEN;
  private static final MethodHandle FCNTL;
  private static final MethodHandle CLOSE;
  private static final MethodHandle MADVISE;
  private static final Throwable UNAVAILABLE;

  /** madvise: fault a range in ahead of the reader, in one call (Linux 5.14). */
  private static final int MADV_POPULATE_READ = 22;

  static {
    MethodHandle open = null;
    MethodHandle fcntl = null;
    MethodHandle close = null;
    MethodHandle madvise = null;
    Throwable cause = null;
    if (!System.getProperty("os.name", "").startsWith("Linux")) {
      cause = new UnsupportedOperationException("file leases are Linux's");
    } else {
      try {
        var libc = LINKER.defaultLookup();
        Linker.Option errno = Linker.Option.captureCallState("errno");
        open =
            LINKER.downcallHandle(
                libc.find("open").orElseThrow(),
                FunctionDescriptor.of(
                    ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT),
                errno);
        fcntl =
            LINKER.downcallHandle(
                libc.find("fcntl").orElseThrow(),
                FunctionDescriptor.of(
                    ValueLayout.JAVA_INT,
                    ValueLayout.JAVA_INT,
                    ValueLayout.JAVA_INT,
                    ValueLayout.JAVA_INT),
                errno,
                Linker.Option.firstVariadicArg(2));
        close =
            LINKER.downcallHandle(
                libc.find("close").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
        madvise =
            LINKER.downcallHandle(
                libc.find("madvise").orElseThrow(),
                FunctionDescriptor.of(
                    ValueLayout.JAVA_INT,
                    ValueLayout.ADDRESS,
                    ValueLayout.JAVA_LONG,
                    ValueLayout.JAVA_INT));
      } catch (RuntimeException | LinkageError e) {
        cause = e;
      }
    }
    OPEN = open;
    FCNTL = fcntl;
    CLOSE = close;
    MADVISE = madvise;
    UNAVAILABLE = cause;
  }

  private final int fd;
  private boolean closed;

  private FileLease(int fd) {
    this.fd = fd;
  }

  /**
   * A read lease on {@code path}, or null with the reason given to {@code why} (the caller then
   * reads the file instead of mapping it): not Linux, leases switched off, a lease-break time under
   * {@value #MIN_BREAK_SECONDS} s, a file another process has open for writing (EAGAIN), a file of
   * another owner (EACCES without CAP_LEASE), a file system without leases.
   */
  static FileLease take(Path path, java.util.function.Consumer<String> why) {
    if (UNAVAILABLE != null) {
      why.accept(UNAVAILABLE.toString());
      return null;
    }
    try {
      if (!"1".equals(Files.readString(Path.of("/proc/sys/fs/leases-enable")).trim())) {
        why.accept("file leases are switched off (/proc/sys/fs/leases-enable)");
        return null;
      }
      long breakSeconds =
          Long.parseLong(Files.readString(Path.of("/proc/sys/fs/lease-break-time")).trim());
      if (breakSeconds < MIN_BREAK_SECONDS) {
        why.accept("the lease-break time is " + breakSeconds + " s");
        return null;
      }
    } catch (IOException | NumberFormatException e) {
      why.accept("cannot read the lease settings: " + e);
      return null;
    }
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment state = arena.allocate(CALL_STATE);
      int fd = (int) OPEN.invokeExact(state, arena.allocateFrom(path.toString()), O_RDONLY);
      if (fd < 0) {
        why.accept("open failed, errno " + (int) ERRNO.get(state, 0L));
        return null;
      }
      if ((int) FCNTL.invokeExact(state, fd, F_SETSIG, SIGURG) < 0
          || (int) FCNTL.invokeExact(state, fd, F_SETLEASE, F_RDLCK) < 0) {
        int errno = (int) ERRNO.get(state, 0L);
        int ignored = (int) CLOSE.invokeExact(fd);
        why.accept("no read lease, errno " + errno);
        return null;
      }
      return new FileLease(fd);
    } catch (Throwable t) {
      why.accept(t.toString());
      return null;
    }
  }

  /**
   * Whether another process asked to truncate or write the file: the lease is being broken, and the
   * mapping must not be read any more.
   */
  boolean broken() {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment state = arena.allocate(CALL_STATE);
      return (int) FCNTL.invokeExact(state, fd, F_GETLEASE, 0) != F_RDLCK;
    } catch (Throwable t) {
      return true;
    }
  }

  /**
   * Faults {@code mapped} in ahead of the digest in one call, instead of one page fault per page on
   * the digest's threads; a kernel without it (before 5.14) leaves the faults to the reader.
   */
  static void populate(MemorySegment mapped) {
    if (MADVISE == null || mapped.byteSize() == 0) {
      return;
    }
    try {
      int ignored = (int) MADVISE.invokeExact(mapped, mapped.byteSize(), MADV_POPULATE_READ);
    } catch (Throwable t) {
      // An optimisation only: the digest faults the pages in itself.
    }
  }

  /** Releases the lease (a waiting writer goes on) and closes the descriptor; idempotent. */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment state = arena.allocate(CALL_STATE);
      int unlocked = (int) FCNTL.invokeExact(state, fd, F_SETLEASE, F_UNLCK);
      int ignored = (int) CLOSE.invokeExact(fd);
    } catch (Throwable t) {
      throw new IllegalStateException("releasing the read lease failed", t);
    }
  }
}
