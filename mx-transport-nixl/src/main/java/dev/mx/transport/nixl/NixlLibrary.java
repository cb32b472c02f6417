package dev.mx.transport.nixl;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BOOLEAN;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The downcalls into one loaded {@code libnixl_capi.so} (or anything exporting its ABI, such as the
 * tests' double), with the layouts of {@code shared/reference/nixl-capi.md}. Each method makes one
 * call; those that return a handle or a buffer take care of the out-pointer and throw {@link
 * NixlStatusException} on a non-zero status, so callers never see a half-made handle. Buffers NIXL
 * allocates for us are copied and freed with libc {@code free()} here. Not thread-safe per agent:
 * {@link NixlTransport} serializes calls.
 */
@SuppressWarnings("restricted") // calling native code is what this class is for
final class NixlLibrary {
  static final int DRAM = 0;

  /** {@code nixl_capi_mem_type_t} of GPU memory; its descriptors carry the CUDA device ordinal. */
  static final int VRAM = 1;

  static final int READ = 0;

  /** {@code nixl_capi_agent_config_t}: 40 bytes, fields at 0, 1, 4, 8, 12, 16, 24, 32. */
  static final StructLayout AGENT_CONFIG =
      MemoryLayout.structLayout(
          JAVA_BOOLEAN.withName("enable_prog_thread"),
          JAVA_BOOLEAN.withName("enable_listen_thread"),
          MemoryLayout.paddingLayout(2),
          JAVA_INT.withName("listen_port"),
          JAVA_INT.withName("thread_sync"),
          JAVA_INT.withName("num_workers"),
          JAVA_LONG.withName("pthr_delay_us"),
          JAVA_LONG.withName("lthr_delay_us"),
          JAVA_BOOLEAN.withName("capture_telemetry"),
          MemoryLayout.paddingLayout(7));

  private static final Linker LINKER = Linker.nativeLinker();
  private static final MethodHandle FREE =
      LINKER.downcallHandle(
          LINKER.defaultLookup().find("free").orElseThrow(), FunctionDescriptor.ofVoid(ADDRESS));
  private static final Map<String, NixlLibrary> LOADED = new ConcurrentHashMap<>();

  private final String origin;
  private final SymbolLookup lookup;
  private final List<String> missing = new ArrayList<>();

  private final MethodHandle isStub;
  private final MethodHandle createConfiguredAgent;
  private final MethodHandle destroyAgent;
  private final MethodHandle getLocalMd;
  private final MethodHandle loadRemoteMd;
  private final MethodHandle invalidateRemoteMd;
  private final MethodHandle checkRemoteMd;
  private final MethodHandle getAvailablePlugins;
  private final MethodHandle stringListSize;
  private final MethodHandle stringListGet;
  private final MethodHandle destroyStringList;
  private final MethodHandle getPluginParams;
  private final MethodHandle destroyMemList;
  private final MethodHandle createParams;
  private final MethodHandle paramsAdd;
  private final MethodHandle destroyParams;
  private final MethodHandle createBackend;
  private final MethodHandle destroyBackend;
  private final MethodHandle createRegDlist;
  private final MethodHandle regDlistAddDesc;
  private final MethodHandle destroyRegDlist;
  private final MethodHandle registerMem;
  private final MethodHandle deregisterMem;
  private final MethodHandle createXferDlist;
  private final MethodHandle xferDlistAddDesc;
  private final MethodHandle destroyXferDlist;
  private final MethodHandle prepXferDlist;
  private final MethodHandle releaseXferDlistHandle;
  private final MethodHandle makeXferReq;
  private final MethodHandle postXferReq;
  private final MethodHandle getXferStatus;
  private final MethodHandle releaseXferReq;
  private final MethodHandle destroyXferReq;
  private final MethodHandle createNotifMap;
  private final MethodHandle destroyNotifMap;
  private final MethodHandle getNotifs;

  private NixlLibrary(String origin, SymbolLookup lookup) {
    this.origin = origin;
    this.lookup = lookup;
    FunctionDescriptor h = FunctionDescriptor.of(JAVA_INT, ADDRESS);
    FunctionDescriptor hh = FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS);
    FunctionDescriptor hhh = FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS);
    FunctionDescriptor hhhh = FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, ADDRESS);
    isStub = bind("is_stub", FunctionDescriptor.of(JAVA_BOOLEAN));
    createConfiguredAgent = bind("create_configured_agent", hhh);
    destroyAgent = bind("destroy_agent", h);
    getLocalMd = bind("get_local_md", hhh);
    loadRemoteMd =
        bind(
            "load_remote_md",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG, ADDRESS));
    invalidateRemoteMd = bind("invalidate_remote_md", hh);
    checkRemoteMd = bind("check_remote_md", hhh);
    getAvailablePlugins = bind("get_available_plugins", hh);
    stringListSize = bind("string_list_size", hh);
    stringListGet =
        bind("string_list_get", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS));
    destroyStringList = bind("destroy_string_list", h);
    getPluginParams = bind("get_plugin_params", hhhh);
    destroyMemList = bind("destroy_mem_list", h);
    createParams = bind("create_params", h);
    paramsAdd = bind("params_add", hhh);
    destroyParams = bind("destroy_params", h);
    createBackend = bind("create_backend", hhhh);
    destroyBackend = bind("destroy_backend", h);
    createRegDlist = bind("create_reg_dlist", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS));
    regDlistAddDesc =
        bind(
            "reg_dlist_add_desc",
            FunctionDescriptor.of(
                JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_LONG, ADDRESS, JAVA_LONG));
    destroyRegDlist = bind("destroy_reg_dlist", h);
    registerMem = bind("register_mem", hhh);
    deregisterMem = bind("deregister_mem", hhh);
    createXferDlist = bind("create_xfer_dlist", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS));
    xferDlistAddDesc =
        bind(
            "xfer_dlist_add_desc",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_LONG));
    destroyXferDlist = bind("destroy_xfer_dlist", h);
    prepXferDlist =
        bind(
            "prep_xfer_dlist",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, ADDRESS, ADDRESS));
    releaseXferDlistHandle = bind("release_xfer_dlist_handle", hh);
    makeXferReq =
        bind(
            "make_xfer_req",
            FunctionDescriptor.of(
                JAVA_INT, ADDRESS, JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG, ADDRESS, ADDRESS,
                JAVA_LONG, ADDRESS, ADDRESS));
    postXferReq = bind("post_xfer_req", hhh);
    getXferStatus = bind("get_xfer_status", hh);
    releaseXferReq = bind("release_xfer_req", hh);
    destroyXferReq = bind("destroy_xfer_req", h);
    createNotifMap = bind("create_notif_map", h);
    destroyNotifMap = bind("destroy_notif_map", h);
    getNotifs = bind("get_notifs", hhh);
  }

  /**
   * Sets {@code UCX_ERROR_SIGNALS} empty in the C environment unless the user set it, before NIXL
   * can load UCX: libucs would otherwise install its own SIGSEGV handler, and the JVM raises
   * SIGSEGV on purpose for implicit null checks, so the first one would end the process.
   */
  static void keepJvmSignals() {
    MethodHandle setenv =
        LINKER.downcallHandle(
            LINKER.defaultLookup().find("setenv").orElseThrow(),
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT));
    try (Arena a = Arena.ofConfined()) {
      int ignored =
          (int)
              setenv.invokeExact(
                  a.allocateFrom("UCX_ERROR_SIGNALS"), a.allocateFrom(""), 0); // 0: keep a set one
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  /**
   * Loads the library at {@code pathOrName} (a path, or a bare name for the system loader path)
   * once per process and checks that it is a real NIXL build exporting every function this binding
   * calls.
   *
   * @throws UnsatisfiedLinkError naming the library and what is wrong with it
   */
  static NixlLibrary load(String pathOrName) {
    NixlLibrary cached = LOADED.get(pathOrName);
    if (cached != null) {
      return cached;
    }
    keepJvmSignals();
    boolean isPath = pathOrName.contains("/");
    if (isPath && !Files.isRegularFile(Path.of(pathOrName))) {
      throw new UnsatisfiedLinkError("NIXL C library " + pathOrName + " does not exist");
    }
    SymbolLookup lookup;
    try {
      lookup =
          isPath
              ? SymbolLookup.libraryLookup(Path.of(pathOrName), Arena.global())
              : SymbolLookup.libraryLookup(pathOrName, Arena.global());
    } catch (IllegalArgumentException e) {
      UnsatisfiedLinkError err =
          new UnsatisfiedLinkError(
              "NIXL C library " + pathOrName + " could not be loaded: " + e.getMessage());
      err.initCause(e);
      throw err;
    }
    NixlLibrary lib = new NixlLibrary(pathOrName, lookup);
    if (!lib.missing.isEmpty()) {
      throw new UnsatisfiedLinkError(
          "NIXL C library "
              + pathOrName
              + " lacks "
              + lib.missing
              + " (mx needs NIXL 1.4 or newer with its C API, libnixl_capi.so)");
    }
    if (lib.isStub()) {
      throw new UnsatisfiedLinkError(
          "NIXL C library "
              + pathOrName
              + " is NIXL's stub build (nixl_capi_is_stub() is"
              + " true: it was built without NIXL and fails every call); point -Dmx.nixl.library / MX_NIXL_LIBRARY at a"
              + " real libnixl_capi.so");
    }
    LOADED.putIfAbsent(pathOrName, lib);
    return LOADED.get(pathOrName);
  }

  /** Where this library was loaded from. */
  String origin() {
    return origin;
  }

  /** A symbol of the library beyond NIXL's ABI (the tests' double has knobs), if present. */
  java.util.Optional<MemorySegment> find(String symbol) {
    return lookup.find(symbol);
  }

  private MethodHandle bind(String function, FunctionDescriptor descriptor) {
    String symbol = "nixl_capi_" + function;
    var address = lookup.find(symbol);
    if (address.isEmpty()) {
      missing.add(symbol);
      return null;
    }
    return LINKER.downcallHandle(address.get(), descriptor);
  }

  // ------------------------------------------------------------------ helpers

  private static RuntimeException rethrow(Throwable t) {
    if (t instanceof RuntimeException re) {
      return re;
    }
    if (t instanceof Error e) {
      throw e;
    }
    return new IllegalStateException(t);
  }

  private static void check(int status, String function) {
    if (status != NixlStatus.SUCCESS) {
      throw new NixlStatusException(function, status);
    }
  }

  /** Frees a buffer NIXL allocated with malloc for us. */
  static void free(MemorySegment p) {
    if (p.equals(MemorySegment.NULL)) {
      return;
    }
    try {
      FREE.invokeExact(p);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  // ------------------------------------------------------------------ agents and metadata

  boolean isStub() {
    try {
      return (boolean) isStub.invokeExact();
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  /** Creates a configured agent; the config struct is laid out by {@link #AGENT_CONFIG}. */
  MemorySegment createConfiguredAgent(
      String name, boolean progressThread, int threadSync, long progressDelayUs) {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment cfg = a.allocate(AGENT_CONFIG);
      cfg.set(JAVA_BOOLEAN, offset("enable_prog_thread"), progressThread);
      cfg.set(JAVA_BOOLEAN, offset("enable_listen_thread"), false);
      cfg.set(JAVA_INT, offset("listen_port"), 0);
      cfg.set(JAVA_INT, offset("thread_sync"), threadSync);
      cfg.set(JAVA_INT, offset("num_workers"), 1);
      cfg.set(JAVA_LONG, offset("pthr_delay_us"), progressDelayUs);
      cfg.set(JAVA_LONG, offset("lthr_delay_us"), 100_000L);
      cfg.set(JAVA_BOOLEAN, offset("capture_telemetry"), false);
      MemorySegment out = a.allocate(ADDRESS);
      int st = (int) createConfiguredAgent.invokeExact(a.allocateFrom(name), cfg, out);
      check(st, "create_configured_agent");
      return out.get(ADDRESS, 0);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  static long offset(String field) {
    return AGENT_CONFIG.byteOffset(MemoryLayout.PathElement.groupElement(field));
  }

  int destroyAgent(MemorySegment agent) {
    try {
      return (int) destroyAgent.invokeExact(agent);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  /** The agent's metadata blob (copied; NIXL's buffer is freed). */
  byte[] getLocalMd(MemorySegment agent) {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment data = a.allocate(ADDRESS);
      MemorySegment len = a.allocate(JAVA_LONG);
      int st = (int) getLocalMd.invokeExact(agent, data, len);
      check(st, "get_local_md");
      MemorySegment buf = data.get(ADDRESS, 0);
      try {
        return buf.reinterpret(len.get(JAVA_LONG, 0))
            .toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
      } finally {
        free(buf);
      }
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  /**
   * Loads a peer's metadata and returns the agent name it describes (NIXL's copy of the name is
   * freed).
   */
  String loadRemoteMd(MemorySegment agent, byte[] blob) {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment data = a.allocate(Math.max(1, blob.length));
      MemorySegment.copy(blob, 0, data, java.lang.foreign.ValueLayout.JAVA_BYTE, 0, blob.length);
      MemorySegment name = a.allocate(ADDRESS);
      int st = (int) loadRemoteMd.invokeExact(agent, data, (long) blob.length, name);
      check(st, "load_remote_md");
      MemorySegment s = name.get(ADDRESS, 0);
      try {
        return s.reinterpret(Long.MAX_VALUE).getString(0);
      } finally {
        free(s);
      }
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  int invalidateRemoteMd(MemorySegment agent, String remote) {
    try (Arena a = Arena.ofConfined()) {
      return (int) invalidateRemoteMd.invokeExact(agent, a.allocateFrom(remote));
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  /** Zero when the loaded metadata of {@code remote} covers every descriptor of {@code dlist}. */
  int checkRemoteMd(MemorySegment agent, String remote, MemorySegment dlist) {
    try (Arena a = Arena.ofConfined()) {
      return (int) checkRemoteMd.invokeExact(agent, a.allocateFrom(remote), dlist);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  /** The plugins this NIXL can load (UCX, ...). */
  List<String> availablePlugins(MemorySegment agent) {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment out = a.allocate(ADDRESS);
      check((int) getAvailablePlugins.invokeExact(agent, out), "get_available_plugins");
      MemorySegment list = out.get(ADDRESS, 0);
      try {
        MemorySegment size = a.allocate(JAVA_LONG);
        check((int) stringListSize.invokeExact(list, size), "string_list_size");
        List<String> names = new ArrayList<>();
        MemorySegment str = a.allocate(ADDRESS);
        for (long i = 0, n = size.get(JAVA_LONG, 0); i < n; i++) {
          check((int) stringListGet.invokeExact(list, i, str), "string_list_get");
          names.add(
              str.get(ADDRESS, 0).reinterpret(Long.MAX_VALUE).getString(0)); // borrowed: copy now
        }
        return names;
      } finally {
        int ignored = (int) destroyStringList.invokeExact(list);
      }
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  /**
   * Creates a backend of {@code plugin}: the plugin's default parameters ({@code
   * get_plugin_params}, which also fails when the plugin cannot be loaded) overridden by {@code
   * params}; the params and memory-type lists are destroyed again here.
   */
  MemorySegment createBackend(MemorySegment agent, String plugin, Map<String, String> params) {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment mems = a.allocate(ADDRESS);
      MemorySegment out = a.allocate(ADDRESS);
      check(
          (int) getPluginParams.invokeExact(agent, a.allocateFrom(plugin), mems, out),
          "get_plugin_params");
      int ignoredMems = (int) destroyMemList.invokeExact(mems.get(ADDRESS, 0));
      MemorySegment p = out.get(ADDRESS, 0);
      try {
        for (Map.Entry<String, String> e : params.entrySet()) {
          check(
              (int)
                  paramsAdd.invokeExact(
                      p, a.allocateFrom(e.getKey()), a.allocateFrom(e.getValue())),
              "params_add");
        }
        MemorySegment backend = a.allocate(ADDRESS);
        check(
            (int) createBackend.invokeExact(agent, a.allocateFrom(plugin), p, backend),
            "create_backend");
        return backend.get(ADDRESS, 0);
      } finally {
        int ignored = (int) destroyParams.invokeExact(p);
      }
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  /** Frees the backend handle only; the backend lives until its agent is destroyed. */
  int destroyBackend(MemorySegment backend) {
    try {
      return (int) destroyBackend.invokeExact(backend);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  // ------------------------------------------------------------------ registration

  /** A one-descriptor registration list of DRAM on device 0. */
  MemorySegment regDlist(long address, long length) {
    return regDlist(DRAM, 0, address, length);
  }

  /**
   * A one-descriptor registration list of {@code memType} ({@link #DRAM}, {@link #VRAM}) on device
   * {@code devId}.
   */
  MemorySegment regDlist(int memType, long devId, long address, long length) {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment out = a.allocate(ADDRESS);
      check((int) createRegDlist.invokeExact(memType, out), "create_reg_dlist");
      MemorySegment l = out.get(ADDRESS, 0);
      int st = (int) regDlistAddDesc.invokeExact(l, address, length, devId, MemorySegment.NULL, 0L);
      if (st != NixlStatus.SUCCESS) {
        int ignored = (int) destroyRegDlist.invokeExact(l);
        check(st, "reg_dlist_add_desc");
      }
      return l;
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  int destroyRegDlist(MemorySegment dlist) {
    try {
      return (int) destroyRegDlist.invokeExact(dlist);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  int registerMem(MemorySegment agent, MemorySegment dlist) {
    try {
      return (int) registerMem.invokeExact(agent, dlist, MemorySegment.NULL);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  int deregisterMem(MemorySegment agent, MemorySegment dlist) {
    try {
      return (int) deregisterMem.invokeExact(agent, dlist, MemorySegment.NULL);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  // ------------------------------------------------------------------ transfers

  /**
   * A DRAM transfer list of {@code addr[from..to)} / {@code len[from..to)}; the caller destroys it.
   */
  MemorySegment xferDlist(long[] addr, long[] len, int from, int to) {
    return xferDlist(DRAM, 0, addr, len, from, to);
  }

  /**
   * As {@link #xferDlist(long[], long[], int, int)}, of {@code memType} on device {@code devId}.
   */
  MemorySegment xferDlist(int memType, long devId, long[] addr, long[] len, int from, int to) {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment out = a.allocate(ADDRESS);
      check((int) createXferDlist.invokeExact(memType, out), "create_xfer_dlist");
      MemorySegment l = out.get(ADDRESS, 0);
      for (int i = from; i < to; i++) {
        int st = (int) xferDlistAddDesc.invokeExact(l, addr[i], len[i], devId);
        if (st != NixlStatus.SUCCESS) {
          int ignored = (int) destroyXferDlist.invokeExact(l);
          check(st, "xfer_dlist_add_desc");
        }
      }
      return l;
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  int destroyXferDlist(MemorySegment dlist) {
    try {
      return (int) destroyXferDlist.invokeExact(dlist);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  /** Prepares a transfer list for {@code agentName} ({@code ""} = this agent as initiator). */
  MemorySegment prepXferDlist(MemorySegment agent, String agentName, MemorySegment dlist) {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment out = a.allocate(ADDRESS);
      int st =
          (int)
              prepXferDlist.invokeExact(
                  agent, a.allocateFrom(agentName), dlist, out, MemorySegment.NULL);
      check(st, "prep_xfer_dlist");
      return out.get(ADDRESS, 0);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  int releaseXferDlistHandle(MemorySegment agent, MemorySegment handle) {
    try {
      return (int) releaseXferDlistHandle.invokeExact(agent, handle);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  /**
   * A READ request pairing descriptor i of {@code local} with descriptor i of {@code remote}, for i
   * below n.
   */
  MemorySegment makeReadReq(MemorySegment agent, MemorySegment local, MemorySegment remote, int n) {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment idx = a.allocate(JAVA_INT, Math.max(1, n));
      for (int i = 0; i < n; i++) {
        idx.setAtIndex(JAVA_INT, i, i);
      }
      MemorySegment out = a.allocate(ADDRESS);
      int st =
          (int)
              makeXferReq.invokeExact(
                  agent,
                  READ,
                  local,
                  idx,
                  (long) n,
                  remote,
                  idx,
                  (long) n,
                  out,
                  MemorySegment.NULL);
      check(st, "make_xfer_req");
      return out.get(ADDRESS, 0);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  int postXferReq(MemorySegment agent, MemorySegment req) {
    try {
      return (int) postXferReq.invokeExact(agent, req, MemorySegment.NULL);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  int getXferStatus(MemorySegment agent, MemorySegment req) {
    try {
      return (int) getXferStatus.invokeExact(agent, req);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  int releaseXferReq(MemorySegment agent, MemorySegment req) {
    try {
      return (int) releaseXferReq.invokeExact(agent, req);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  int destroyXferReq(MemorySegment req) {
    try {
      return (int) destroyXferReq.invokeExact(req);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  // ------------------------------------------------------------------ progress

  MemorySegment createNotifMap() {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment out = a.allocate(ADDRESS);
      check((int) createNotifMap.invokeExact(out), "create_notif_map");
      return out.get(ADDRESS, 0);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  int destroyNotifMap(MemorySegment map) {
    try {
      return (int) destroyNotifMap.invokeExact(map);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  /**
   * Drives the agent's backends once (what makes progress when the agent has no progress thread).
   */
  int getNotifs(MemorySegment agent, MemorySegment map) {
    try {
      return (int) getNotifs.invokeExact(agent, map, MemorySegment.NULL);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public String toString() {
    return "NixlLibrary[" + origin + "]";
  }
}
