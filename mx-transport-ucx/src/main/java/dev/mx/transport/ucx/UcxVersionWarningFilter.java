package dev.mx.transport.ucx;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.function.Supplier;

/**
 * Drops the one warning UCX prints on every context when jucx is newer than libucp ("UCP API
 * version is incompatible": jucx 1.18 asks for API 1.18, Debian ships 1.13, and the calls this
 * transport makes exist in both). A log handler is pushed onto UCX's handler stack only while a
 * context is created, on the creating thread's watch, and passes every other message on; if the
 * handler cannot be installed, nothing is filtered.
 */
@SuppressWarnings("restricted") // calling native code is what this class is for
final class UcxVersionWarningFilter {
  private static final String MESSAGE_PREFIX = "UCP API version is incompatible";
  private static final int RC_STOP = 0;
  private static final int RC_CONTINUE = 1;
  private static final boolean IS_AMD64 = System.getProperty("os.arch").matches("amd64|x86_64");
  private static final MethodHandle PUSH;
  private static final MethodHandle POP;
  private static final MemorySegment HANDLER;

  static {
    MethodHandle push = null;
    MethodHandle pop = null;
    MemorySegment handler = null;
    try {
      Linker linker = Linker.nativeLinker();
      SymbolLookup ucs = SymbolLookup.libraryLookup("libucs.so.0", Arena.global());
      push =
          linker.downcallHandle(
              ucs.find("ucs_log_push_handler").orElseThrow(),
              FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));
      pop =
          linker.downcallHandle(
              ucs.find("ucs_log_pop_handler").orElseThrow(), FunctionDescriptor.ofVoid());
      // ucs_log_func_rc_t (*)(const char *file, unsigned line, const char *function,
      // ucs_log_level_t level,
      //                       const ucs_log_component_config_t *comp, const char *format, va_list
      // ap)
      FunctionDescriptor signature =
          FunctionDescriptor.of(
              ValueLayout.JAVA_INT,
              ValueLayout.ADDRESS,
              ValueLayout.JAVA_INT,
              ValueLayout.ADDRESS,
              ValueLayout.JAVA_INT,
              ValueLayout.ADDRESS,
              ValueLayout.ADDRESS,
              ValueLayout.ADDRESS);
      MethodHandle target =
          MethodHandles.lookup()
              .findStatic(
                  UcxVersionWarningFilter.class,
                  "onLog",
                  MethodType.methodType(
                      int.class,
                      MemorySegment.class,
                      int.class,
                      MemorySegment.class,
                      int.class,
                      MemorySegment.class,
                      MemorySegment.class,
                      MemorySegment.class));
      handler = linker.upcallStub(target, signature, Arena.global());
    } catch (Throwable t) {
      push = null;
    }
    PUSH = push;
    POP = pop;
    HANDLER = handler;
  }

  private UcxVersionWarningFilter() {}

  /** The upcall: must never throw (an exception escaping an upcall ends the JVM). */
  @SuppressWarnings("unused")
  private static int onLog(
      MemorySegment file,
      int line,
      MemorySegment function,
      int level,
      MemorySegment comp,
      MemorySegment format,
      MemorySegment args) {
    try {
      String f = format.reinterpret(256).getString(0);
      String message = f.equals("%s") ? firstStringArgument(args) : f;
      return message != null && message.startsWith(MESSAGE_PREFIX) ? RC_STOP : RC_CONTINUE;
    } catch (Throwable t) {
      return RC_CONTINUE;
    }
  }

  /**
   * UCX formats the message first and logs it as {@code "%s"}: read that string out of the x86-64
   * System V {@code va_list} ({@code gp_offset, fp_offset, overflow_arg_area, reg_save_area}).
   * Elsewhere: null.
   */
  private static String firstStringArgument(MemorySegment vaList) {
    if (!IS_AMD64) {
      return null;
    }
    MemorySegment ap = vaList.reinterpret(24);
    int gpOffset = ap.get(ValueLayout.JAVA_INT, 0);
    MemorySegment slot =
        gpOffset <= 40
            ? ap.get(ValueLayout.ADDRESS, 16).reinterpret(48).asSlice(gpOffset, 8)
            : ap.get(ValueLayout.ADDRESS, 8).reinterpret(8);
    return slot.get(ValueLayout.ADDRESS, 0).reinterpret(4096).getString(0);
  }

  /** Runs {@code action} (which creates a UCX context) with the version warning filtered out. */
  static synchronized <T> T run(Supplier<T> action) {
    if (PUSH == null) {
      return action.get();
    }
    try {
      PUSH.invokeExact(HANDLER);
    } catch (Throwable t) {
      return action.get();
    }
    try {
      return action.get();
    } finally {
      try {
        POP.invokeExact();
      } catch (Throwable ignored) {
        // The handler stays installed; it only ever drops the version warning.
      }
    }
  }
}
