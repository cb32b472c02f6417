package dev.mx.transport.nixl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.error.TransportException;
import dev.mx.api.error.TransportTimeoutException;
import dev.mx.api.transport.MemoryRegistration;
import dev.mx.api.transport.ReadDescriptor;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The binding's error paths, over the test double: every non-zero NIXL status at each call that
 * moves data, a transfer stuck in progress past the timeout, a blob that is not NIXL metadata,
 * descriptors outside the peer's registered regions; and the request cache, the agent's
 * configuration layout, backend parameters and the release order, checked through the double's
 * handle counts (nothing leaks).
 */
class NixlErrorPathTest {
  private static final String PEER = "publisher";
  private static final String[] HANDLE_KINDS = {
    "agent",
    "params",
    "backend",
    "opt_args",
    "string_list",
    "reg_dlist",
    "xfer_dlist",
    "dlist_handle",
    "xfer_req",
    "notif_map",
    "registered",
    "registered_at_destroy",
    "mem_list"
  };

  private Arena arena;
  private NixlTransport publisher;
  private NixlTransport receiver;
  private MemorySegment src;
  private MemorySegment dst;

  @BeforeEach
  @SuppressWarnings("MustBeClosedChecker") // closed in @AfterEach
  void open() {
    NixlDouble.reset();
    arena = Arena.ofShared();
    publisher = NixlDouble.transport(PEER);
    receiver = NixlDouble.transport("receiver");
    src = arena.allocate(64 * 1024, 64);
    for (long i = 0; i < src.byteSize(); i++) {
      src.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 7 + 3));
    }
    dst = arena.allocate(64 * 1024, 64);
    publisher.register(src);
    receiver.register(dst);
    receiver.connect(PEER, publisher.localMetadata());
  }

  @AfterEach
  void closeAndCheckNothingLeaked() {
    receiver.close();
    publisher.close();
    arena.close();
    for (String kind : HANDLE_KINDS) {
      assertEquals(0, NixlDouble.live(kind), "live NIXL '" + kind + "' handles after close");
    }
    NixlDouble.reset();
  }

  private List<ReadDescriptor> batch(long n) {
    return List.of(new ReadDescriptor(PEER, src.address(), dst.address(), n));
  }

  private void assertReadWorks() {
    dst.fill((byte) 0);
    receiver.read(batch(4096));
    assertEquals(-1, MemorySegment.mismatch(src, 0, 4096, dst, 0, 4096), "a later read works");
  }

  private static void assertNamesStatus(TransportException e, int status) {
    assertTrue(
        e.getMessage().contains("NIXL status " + status + " (" + NixlStatus.name(status) + ")"),
        e.getMessage());
  }

  @ParameterizedTest(name = "post_xfer_req returns {0}")
  @ValueSource(ints = {-1, -2, -3, -4, -5, -6})
  void everyFailedPostNamesPeerAndStatus(int status) {
    NixlDouble.inject("post_xfer_req", status, 1);
    TransportException e = assertThrows(TransportException.class, () -> receiver.read(batch(1024)));
    assertEquals(PEER, e.peer());
    assertTrue(e.getMessage().contains("post_xfer_req"), e.getMessage());
    assertNamesStatus(e, status);
    assertEquals(0, dst.get(ValueLayout.JAVA_BYTE, 1), "nothing moved");
    assertEquals(0, NixlDouble.live("xfer_req"), "the failed request was released and destroyed");
    assertReadWorks();
  }

  @ParameterizedTest(name = "get_xfer_status returns {0}")
  @ValueSource(ints = {-1, -2, -3, -4, -5, -6})
  void everyFailedStatusPollNamesPeerAndStatus(int status) {
    NixlDouble.inject("get_xfer_status", status, 1);
    TransportException e = assertThrows(TransportException.class, () -> receiver.read(batch(1024)));
    assertEquals(PEER, e.peer());
    assertTrue(e.getMessage().contains("get_xfer_status"), e.getMessage());
    assertNamesStatus(e, status);
    assertEquals(0, NixlDouble.live("xfer_req"));
    assertReadWorks();
  }

  @ParameterizedTest(name = "prep/make request returns {0}")
  @ValueSource(ints = {-1, -2, -3, -4, -5, -6})
  void everyFailedPreparationNamesPeerAndStatus(int status) {
    for (String call :
        new String[] {
          "prep_xfer_dlist", "make_xfer_req", "create_xfer_dlist", "xfer_dlist_add_desc"
        }) {
      NixlDouble.inject(call, status, 1);
      TransportException e =
          assertThrows(TransportException.class, () -> receiver.read(batch(1024)), call);
      assertEquals(PEER, e.peer(), call);
      assertTrue(
          e.getMessage().contains(call)
              && e.getMessage().contains("nothing in this batch was read"),
          e.getMessage());
      assertNamesStatus(e, status);
      assertEquals(0, NixlDouble.live("dlist_handle"), call + ": prepared lists were released");
      assertEquals(0, NixlDouble.live("xfer_dlist"), call + ": transfer lists were destroyed");
    }
    assertReadWorks();
  }

  @ParameterizedTest(name = "load_remote_md returns {0}")
  @ValueSource(ints = {-1, -2, -3, -4, -5, -6})
  void everyFailedMetadataLoadNamesPeerAndStatus(int status) {
    NixlDouble.inject("load_remote_md", status, 1);
    TransportException e =
        assertThrows(
            TransportException.class, () -> receiver.connect("other", publisher.localMetadata()));
    assertEquals("other", e.peer());
    assertNamesStatus(e, status);
    assertTrue(!receiver.isConnected("other"));
  }

  @ParameterizedTest(name = "register_mem returns {0}")
  @ValueSource(ints = {-1, -2, -3, -4, -5, -6})
  void everyFailedRegistrationNamesRegionAndStatus(int status) {
    MemorySegment extra = arena.allocate(4096, 64);
    NixlDouble.inject("register_mem", status, 1);
    TransportException e = assertThrows(TransportException.class, () -> receiver.register(extra));
    assertTrue(e.getMessage().contains(Long.toHexString(extra.address())), e.getMessage());
    assertNamesStatus(e, status);
    receiver.register(extra).close(); // the region was not taken: it can be registered now
  }

  @Test
  void aPeerWhoseAgentIsGoneDoesNotFailTheClose() {
    assertReadWorks(); // connected to the publisher
    // What NIXL 1.4's UCX backend answers for a peer agent that was destroyed first.
    NixlDouble.inject("invalidate_remote_md", -2, 1);
    assertEquals(2, NixlDouble.live("agent"));
    receiver.close(); // no exception: the agent destroyed next frees that peer's state
    assertEquals(1, NixlDouble.live("agent"), "the receiver's agent was destroyed all the same");
  }

  @Test
  void failedMetadataExportAndAgentCreationAreReported() {
    NixlDouble.inject("get_local_md", -4, 1);
    TransportException e = assertThrows(TransportException.class, publisher::localMetadata);
    assertNamesStatus(e, -4);
    NixlDouble.inject("create_configured_agent", -2, 1);
    e = assertThrows(TransportException.class, () -> NixlDouble.transport("never"));
    assertTrue(e.getMessage().contains("'never'"), e.getMessage());
    assertNamesStatus(e, -2);
  }

  @Test
  void unknownBackendFailsNamingItAndTheAvailablePlugins() {
    TransportException e =
        assertThrows(
            TransportException.class,
            () -> NixlDouble.transport("gds", Map.of("nixl.backend", "GDS")));
    assertTrue(
        e.getMessage().contains("GDS")
            && e.getMessage().contains("[UCX]")
            && e.getMessage().contains("get_plugin_params"),
        e.getMessage());
    assertNamesStatus(e, -2);
    assertEquals(2, NixlDouble.live("agent"), "the half-made agent was destroyed");
  }

  @Test
  void transferStuckInProgressTimesOutNamingPeerAndIsAborted() {
    NixlDouble.set("stuck", 1);
    List<ReadDescriptor> b = batch(4096);
    TransportTimeoutException e =
        assertThrows(
            TransportTimeoutException.class, () -> receiver.read(b, Duration.ofMillis(200)));
    assertEquals(PEER, e.peer());
    assertTrue(
        e.getMessage().contains("IN_PROG") && e.getMessage().contains("'" + PEER + "'"),
        e.getMessage());
    assertEquals(
        0, NixlDouble.live("xfer_req"), "the late request was released (aborted) and destroyed");
    NixlDouble.set("stuck", 0);
    assertEquals(0, dst.get(ValueLayout.JAVA_BYTE, 1), "the aborted transfer moved nothing");
    assertTrue(!receiver.isHealthy());
    assertReadWorks();
    assertTrue(receiver.isHealthy());
  }

  @Test
  void blobThatIsNotNixlMetadataIsRejectedNamingThePeer() {
    for (byte[] blob :
        new byte[][] {
          "hello".getBytes(StandardCharsets.UTF_8),
          new byte[0],
          java.util.Arrays.copyOf(publisher.localMetadata(), 20)
        }) {
      TransportException e =
          assertThrows(TransportException.class, () -> receiver.connect("stranger", blob));
      assertEquals("stranger", e.peer());
      assertTrue(e.getMessage().contains("not NIXL agent metadata"), e.getMessage());
      assertTrue(e.getMessage().contains(blob.length + " bytes"), e.getMessage());
    }
    assertTrue(!receiver.isConnected("stranger"));
  }

  @Test
  void descriptorOutsideThePeersRegionsIsNamedAmongThousands() {
    List<ReadDescriptor> b = new ArrayList<>();
    for (int i = 0; i < 5000; i++) {
      long off = (i * 8L) % 60_000;
      b.add(new ReadDescriptor(PEER, src.address() + off, dst.address() + off, 8));
    }
    b.set(3071, new ReadDescriptor(PEER, src.address() + src.byteSize() - 4, dst.address(), 8));
    TransportException e = assertThrows(TransportException.class, () -> receiver.read(b));
    assertEquals(PEER, e.peer());
    assertTrue(e.getMessage().contains("descriptor #3071 "), e.getMessage());
    assertTrue(e.getMessage().contains("check_remote_md"), e.getMessage());
    assertEquals(0, NixlDouble.live("xfer_req"), "nothing was posted");
  }

  @Test
  void memoryThePeerDeregisteredFailsWhenTheTransferCompletes() {
    MemorySegment more = arena.allocate(4096, 64);
    MemoryRegistration r = publisher.register(more);
    receiver.connect(PEER, publisher.localMetadata());
    r.close();
    TransportException e =
        assertThrows(
            TransportException.class,
            () ->
                receiver.read(
                    List.of(new ReadDescriptor(PEER, more.address(), dst.address(), 64))));
    assertEquals(PEER, e.peer());
    assertNamesStatus(e, -2);
  }

  /**
   * The double's model of a real NIXL over shared memory, CMA or TCP, which the conformance suite's
   * "no" of {@code REVOKES_DEREGISTERED_MEMORY} meets: the read succeeds with the bytes the memory
   * still holds, so only the version protocol's fences keep a receiver off reclaimed memory.
   */
  @Test
  void memoryThePeerDeregisteredIsStillServedWhenTheDoubleModelsARealNixl() {
    NixlDouble.set("serve_deregistered", 1);
    MemorySegment more = arena.allocate(4096, 64);
    more.fill((byte) 0x5a);
    MemoryRegistration r = publisher.register(more);
    receiver.connect(PEER, publisher.localMetadata());
    r.close();
    receiver.read(List.of(new ReadDescriptor(PEER, more.address(), dst.address(), 64)));
    assertEquals(-1, MemorySegment.mismatch(more, 0, 64, dst, 0, 64), "served after deregister");
    assertFalse(receiver.revokesDeregisteredMemory(), "and the transport says it may be");
  }

  @Test
  void preparedRequestsAreReusedAcrossRefitsAndDroppedWhenTheirMemoryGoes() {
    List<ReadDescriptor> refit = new ArrayList<>();
    for (int i = 0; i < 100; i++) {
      refit.add(new ReadDescriptor(PEER, src.address() + i * 64L, dst.address() + i * 64L, 64));
    }
    for (int step = 0; step < 5; step++) {
      receiver.read(refit);
    }
    assertEquals(1, receiver.cachedRequests());
    assertEquals(1, NixlDouble.live("xfer_req"), "one request, re-posted each step");
    assertEquals(2, NixlDouble.live("dlist_handle"));
    receiver.read(batch(128));
    assertEquals(2, receiver.cachedRequests());
    receiver.connect(PEER, publisher.localMetadata()); // reconnecting drops that peer's requests
    assertEquals(0, receiver.cachedRequests());
    receiver.read(refit);
    MemoryRegistration extra = receiver.register(arena.allocate(4096, 64));
    extra.close(); // deregistering local memory drops every prepared request
    assertEquals(0, receiver.cachedRequests());
    assertEquals(0, NixlDouble.live("xfer_req"));
  }

  @Test
  void cacheIsBoundedLeastRecentlyUsedFirst() {
    try (NixlTransport small = NixlDouble.transport("small", Map.of("nixl.cachedRequests", "2"))) {
      small.register(arena.allocate(64 * 1024, 64));
      small.connect(PEER, publisher.localMetadata());
      small.register(arena.allocate(4096, 64)).close();
    }
    MemorySegment d2 = arena.allocate(4096, 64);
    try (NixlTransport small = NixlDouble.transport("small", Map.of("nixl.cachedRequests", "2"))) {
      small.register(d2);
      small.connect(PEER, publisher.localMetadata());
      long before = NixlDouble.live("xfer_req");
      for (int i = 0; i < 3; i++) {
        small.read(List.of(new ReadDescriptor(PEER, src.address() + i, d2.address(), 100)));
      }
      assertEquals(2, small.cachedRequests());
      assertEquals(before + 2, NixlDouble.live("xfer_req"));
    }
  }

  @Test
  void agentConfigurationAndBackendParametersReachNixl() {
    try (NixlTransport t =
        NixlDouble.transport(
            "configured",
            Map.of(
                "nixl.progressDelayUs",
                "777",
                "nixl.threadSync",
                "RW",
                "nixl.param.num_workers",
                "2"))) {
      String cfg = NixlDouble.lastAgentConfig();
      assertTrue(
          cfg.contains(
              "prog=1 listen=0 port=0 sync=2 workers=1 pdelay=777 ldelay=100000 telemetry=0"),
          cfg);
      assertEquals("UCX:num_workers=2", NixlDouble.lastBackend());
      assertTrue(!t.needsCallerProgress());
    }
    try (NixlTransport t = NixlDouble.transport("driven", Map.of("nixl.progressThread", "false"))) {
      assertTrue(NixlDouble.lastAgentConfig().startsWith("prog=0 "), NixlDouble.lastAgentConfig());
      assertTrue(t.needsCallerProgress());
    }
  }

  @Test
  void closeReleasesEverythingInOrderAndIsIdempotent() {
    receiver.read(batch(4096));
    assertEquals(1, NixlDouble.live("xfer_req"));
    receiver.close();
    receiver.close();
    assertEquals(
        0,
        NixlDouble.live("registered_at_destroy"),
        "memory was deregistered before the agent went");
    assertEquals(1, NixlDouble.live("agent"), "only the publisher's agent is left");
    assertEquals(0, NixlDouble.live("xfer_req"));
    assertEquals(0, NixlDouble.live("dlist_handle"));
    TransportException e = assertThrows(TransportException.class, () -> receiver.read(batch(8)));
    assertInstanceOf(TransportException.class, e);
    assertTrue(e.getMessage().contains("closed"), e.getMessage());
  }
}
