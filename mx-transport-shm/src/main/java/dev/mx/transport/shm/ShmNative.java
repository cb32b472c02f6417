package dev.mx.transport.shm;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;

/**
 * The few libc calls Java has no API for: {@code process_vm_readv} (cross-memory attach, for memory
 * a caller registered rather than allocated through the transport), and {@code open}/{@code
 * posix_fallocate}/ {@code close} (to reserve a shared file's pages up front, so a full {@code
 * /dev/shm} fails the allocation with ENOSPC instead of a later SIGBUS on first write). Each call
 * reports errno.
 */
@SuppressWarnings("restricted") // calling libc is what this class is for
final class ShmNative {
  static final int EPERM = 1;
  static final int ENOENT = 2;
  static final int ESRCH = 3;
  static final int EACCES = 13;
  static final int EFAULT = 14;
  static final int ENOSPC = 28;
  static final int ENOSYS = 38;

  /** Linux's IOV_MAX: the most iovecs one process_vm_readv accepts per side. */
  static final int IOV_MAX = 1024;

  private static final int O_RDWR = 2;

  private static final Linker LINKER = Linker.nativeLinker();
  private static final StructLayout CALL_STATE = Linker.Option.captureStateLayout();
  private static final VarHandle ERRNO =
      CALL_STATE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
  private static final MethodHandle PROCESS_VM_READV;
  private static final MethodHandle OPEN;
  private static final MethodHandle CLOSE;
  private static final MethodHandle POSIX_FALLOCATE;

  static {
    SymbolLookup libc = LINKER.defaultLookup();
    Linker.Option errno = Linker.Option.captureCallState("errno");
    PROCESS_VM_READV =
        LINKER.downcallHandle(
            libc.find("process_vm_readv").orElseThrow(),
            FunctionDescriptor.of(
                ValueLayout.JAVA_LONG,
                ValueLayout.JAVA_INT,
                ValueLayout.ADDRESS,
                ValueLayout.JAVA_LONG,
                ValueLayout.ADDRESS,
                ValueLayout.JAVA_LONG,
                ValueLayout.JAVA_LONG),
            errno);
    OPEN =
        LINKER.downcallHandle(
            libc.find("open").orElseThrow(),
            FunctionDescriptor.of(
                ValueLayout.JAVA_INT,
                ValueLayout.ADDRESS,
                ValueLayout.JAVA_INT,
                ValueLayout.JAVA_INT),
            errno,
            Linker.Option.firstVariadicArg(2));
    CLOSE =
        LINKER.downcallHandle(
            libc.find("close").orElseThrow(),
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
    POSIX_FALLOCATE =
        LINKER.downcallHandle(
            libc.find("posix_fallocate").orElseThrow(),
            FunctionDescriptor.of(
                ValueLayout.JAVA_INT,
                ValueLayout.JAVA_INT,
                ValueLayout.JAVA_LONG,
                ValueLayout.JAVA_LONG));
  }

  private ShmNative() {}

  /** A native failure with its errno. */
  static final class NativeError extends Exception {
    private static final long serialVersionUID = 1L;
    final int errno;

    NativeError(String call, int errno) {
      super(call + " failed: " + describe(errno));
      this.errno = errno;
    }
  }

  /** errno as its symbolic name where it matters here. */
  static String describe(int errno) {
    return switch (errno) {
      case EPERM -> "EPERM (operation not permitted)";
      case ENOENT -> "ENOENT (no such file)";
      case ESRCH -> "ESRCH (no such process)";
      case EACCES -> "EACCES (permission denied)";
      case EFAULT -> "EFAULT (bad address)";
      case ENOSPC -> "ENOSPC (no space left)";
      case ENOSYS -> "ENOSYS (not implemented)";
      default -> "errno " + errno;
    };
  }

  /**
   * Reads from process {@code pid}: {@code count} iovecs at {@code local} and {@code remote} (16
   * bytes each: base, length). Returns the bytes read, which is less than asked when part of the
   * remote range is unmapped.
   */
  static long processVmReadv(
      int pid, MemorySegment local, MemorySegment remote, int count, MemorySegment state)
      throws NativeError {
    long n;
    try {
      n =
          (long)
              PROCESS_VM_READV.invokeExact(
                  state, pid, local, (long) count, remote, (long) count, 0L);
    } catch (Throwable t) {
      throw new AssertionError("process_vm_readv downcall failed", t);
    }
    if (n < 0) {
      throw new NativeError("process_vm_readv", (int) ERRNO.get(state, 0L));
    }
    return n;
  }

  /** Memory for the errno a call captures. */
  static MemorySegment callState(Arena arena) {
    return arena.allocate(CALL_STATE);
  }

  /** Reserves {@code length} bytes of the file at {@code path} (its pages exist afterwards). */
  static void fallocate(String path, long length) throws NativeError {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment state = callState(a);
      int fd = (int) OPEN.invokeExact(state, a.allocateFrom(path), O_RDWR, 0);
      if (fd < 0) {
        throw new NativeError("open(" + path + ")", (int) ERRNO.get(state, 0L));
      }
      try {
        int rc = (int) POSIX_FALLOCATE.invokeExact(fd, 0L, length);
        if (rc != 0) {
          throw new NativeError("posix_fallocate(" + path + ", " + length + ")", rc);
        }
      } finally {
        int ignored = (int) CLOSE.invokeExact(fd);
      }
    } catch (NativeError e) {
      throw e;
    } catch (Throwable t) {
      throw new AssertionError("libc downcall failed", t);
    }
  }
}
