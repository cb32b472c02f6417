package dev.mx.transport.nixl;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.mx.api.transport.TransportConfig;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.Map;

/**
 * The tests' handle on the C test double of NIXL's ABI ({@code src/test/c/nixl_capi_double.c},
 * compiled by the build into {@code target/native}): the library itself, loaded through the binding
 * like a real NIXL, and its test-only knobs. Also the skip-or-fail rule for tests that need a real
 * NIXL.
 */
@SuppressWarnings("restricted")
final class NixlDouble {
  private static final Linker LINKER = Linker.nativeLinker();
  static final NixlLibrary LIBRARY = NixlLibrary.load(path("mx.nixl.test.double"));
  private static final MethodHandle INJECT =
      knob("nixl_double_inject", FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT, JAVA_INT));
  private static final MethodHandle SET =
      knob("nixl_double_set", FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG));
  private static final MethodHandle LIVE =
      knob("nixl_double_live", FunctionDescriptor.of(JAVA_LONG, ADDRESS));
  private static final MethodHandle LAST_AGENT_CONFIG =
      knob("nixl_double_last_agent_config", FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG));
  private static final MethodHandle LAST_BACKEND =
      knob("nixl_double_last_backend", FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG));
  private static final MethodHandle LAST_REGISTRATION =
      knob("nixl_double_last_registration", FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG));
  private static final MethodHandle LAST_XFER =
      knob("nixl_double_last_xfer", FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG));

  private NixlDouble() {}

  static String path(String property) {
    String p = System.getProperty(property);
    if (p == null) {
      throw new IllegalStateException(
          "-D"
              + property
              + " is not set: run the tests through Maven, which compiles"
              + " the NIXL test double into target/native");
    }
    return p;
  }

  private static MethodHandle knob(String symbol, FunctionDescriptor fd) {
    return LINKER.downcallHandle(
        LIBRARY
            .find(symbol)
            .orElseThrow(
                () ->
                    new IllegalStateException(
                        LIBRARY.origin() + " is not the NIXL test double (no " + symbol + ")")),
        fd);
  }

  /** An endpoint over the double. */
  static NixlTransport transport(String session) {
    return new NixlTransport(LIBRARY, TransportConfig.of(session));
  }

  static NixlTransport transport(String session, Map<String, String> properties) {
    return new NixlTransport(
        LIBRARY, new TransportConfig(session, java.time.Duration.ofSeconds(30), properties));
  }

  /** Makes the next {@code times} calls of {@code nixl_capi_<function>} return {@code status}. */
  static void inject(String function, int status, int times) {
    try (Arena a = Arena.ofConfined()) {
      INJECT.invokeExact(a.allocateFrom(function), status, times);
    } catch (Throwable t) {
      throw new IllegalStateException(t);
    }
  }

  /**
   * Sets a knob: {@code in_prog_polls}, {@code stuck}, {@code serve_deregistered} (1: a peer's
   * deregistered memory is still read, as a real NIXL over shared memory, CMA or TCP does; 0, the
   * default: such a read fails with -2, as on RDMA hardware), or {@code reset}.
   */
  static void set(String knob, long value) {
    try (Arena a = Arena.ofConfined()) {
      SET.invokeExact(a.allocateFrom(knob), value);
    } catch (Throwable t) {
      throw new IllegalStateException(t);
    }
  }

  static void reset() {
    set("reset", 0);
  }

  /** Live handles of a kind ({@code agent}, {@code xfer_req}, {@code registered}, ...). */
  static long live(String kind) {
    try (Arena a = Arena.ofConfined()) {
      return (long) LIVE.invokeExact(a.allocateFrom(kind));
    } catch (Throwable t) {
      throw new IllegalStateException(t);
    }
  }

  static String lastAgentConfig() {
    return text(LAST_AGENT_CONFIG);
  }

  static String lastBackend() {
    return text(LAST_BACKEND);
  }

  /**
   * {@code type=T dev=D addr=0x.. len=N}: memory type and device id of the last register_mem list.
   */
  static String lastRegistration() {
    return text(LAST_REGISTRATION);
  }

  /**
   * The last two prep_xfer_dlist lists, {@code agent=NAME type=T dev=D count=N; ...} (local first,
   * then remote).
   */
  static String lastXfer() {
    return text(LAST_XFER);
  }

  private static String text(MethodHandle h) {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment buf = a.allocate(2048);
      h.invokeExact(buf, 2048L);
      return buf.getString(0);
    } catch (Throwable t) {
      throw new IllegalStateException(t);
    }
  }

  /** Why no real NIXL is testable here, or null when one is. */
  static String whyNoRealNixl() {
    if (System.getProperty(Nixl.LIBRARY_PROPERTY) == null
        && System.getenv(Nixl.LIBRARY_ENV) == null
        && !Nixl.isAvailable()) {
      return "no real NIXL: " + Nixl.LIBRARY_ENV + " is unset and " + Nixl.unavailabilityCause();
    } else if (!Nixl.isAvailable()) {
      return "NIXL is unavailable: " + Nixl.unavailabilityCause();
    } else if (NixlLibrary.load(Nixl.libraryOrigin()).find("nixl_double_inject").isPresent()) {
      return Nixl.libraryOrigin() + " is mx's test double, not a real NIXL";
    }
    return null;
  }

  /**
   * Skips (or, with {@code -Dmx.test.requireNative=true}, fails) unless {@code MX_NIXL_LIBRARY} or
   * {@code -Dmx.nixl.library} points at a NIXL that {@link Nixl} accepts, printing why.
   */
  static void requireRealNixl() {
    String why = whyNoRealNixl();
    if (why == null) {
      System.err.println(
          "testing the real NIXL at " + Nixl.libraryOrigin() + ", plugins " + Nixl.plugins());
      return;
    }
    if (Boolean.getBoolean("mx.test.requireNative")) {
      fail(why + " (and -Dmx.test.requireNative=true)", Nixl.unavailabilityCause());
    }
    System.err.println("skipping: " + why);
    assumeTrue(false, why);
  }
}
