package dev.mx.refit.publish;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.digest.DigestProvider;
import dev.mx.api.error.NoProviderException;
import dev.mx.api.error.TransportException;
import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.PublishedShard;
import dev.mx.api.metadata.PublishedTensor;
import dev.mx.api.metadata.ShardTable;
import dev.mx.api.metadata.SourceRecord;
import dev.mx.api.metadata.SourceStatus;
import dev.mx.api.spi.ProviderRegistry;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.api.util.Settings;
import dev.mx.metadata.Discovery;
import dev.mx.metadata.ShardTableCodec;
import dev.mx.metadata.memory.MemoryMetadataStore;
import dev.mx.testing.Eventually;
import dev.mx.transport.mem.MemTransportProvider;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The publisher over the real in-process transport and a real in-memory store. */
class PublisherTest {
  private static final String IDENTITY = "model=tiny;role=trainer";
  private static final Duration FRESH = Duration.ofSeconds(90);
  private static final Settings NO_ENV = Settings.of(Map.of(), Map.of());

  private final Arena arena = Arena.ofShared();
  private final Transport trainer =
      new MemTransportProvider().create(TransportConfig.of("trainer-0"));
  private final Transport receiver =
      new MemTransportProvider().create(TransportConfig.of("receiver-0"));
  private final MemoryMetadataStore store =
      new MemoryMetadataStore("publisher-" + UUID.randomUUID());
  private final Sha256TestDoubleDigestProvider digest = new Sha256TestDoubleDigestProvider();
  private final List<AutoCloseable> toClose = new ArrayList<>();

  @AfterEach
  void closeAll() throws Exception {
    for (AutoCloseable c : toClose.reversed()) {
      c.close();
    }
    receiver.close();
    trainer.close();
    store.close();
    arena.close();
  }

  private ProviderRegistry<DigestProvider> digests() {
    return ProviderRegistry.of(
        DigestProvider.class, "digest", "mx.digest", "MX_DIGEST", NO_ENV, List.of(digest));
  }

  /** {@code n} floats with values {@code base + i}. */
  private MemorySegment floats(int n, float base) {
    MemorySegment s = arena.allocate((long) n * 4, 64);
    for (int i = 0; i < n; i++) {
      s.setAtIndex(ValueLayout.JAVA_FLOAT, i, base + i);
    }
    return s;
  }

  private Publisher.Builder builder() {
    return Publisher.builder(trainer, store)
        .identity(IDENTITY)
        .workerId("w0")
        .rank(3)
        .settings(NO_ENV)
        .digestProviders(digests())
        .heartbeatInterval(Duration.ofHours(1));
  }

  private Publisher started(Publisher.Builder b) {
    Publisher p = b.start();
    toClose.add(p);
    return p;
  }

  /** Reads {@code nbytes} at {@code addr} of the trainer through the receiver transport. */
  private byte[] readRemote(ShardTable t, long addr, int nbytes) {
    if (!receiver.isConnected(t.agentName())) {
      receiver.connect(t.agentName(), t.agentMetadata());
    }
    MemorySegment dst = arena.allocate(nbytes);
    receiver.register(dst);
    receiver.read(List.of(new ReadDescriptor(t.agentName(), addr, dst.address(), nbytes)));
    return dst.toArray(ValueLayout.JAVA_BYTE);
  }

  @Test
  void publishesTheTableAndIsReadyAtOnce() {
    MemorySegment left = floats(8, 0);
    MemorySegment right = floats(8, 100);
    MemorySegment norm = floats(4, 7);
    Publisher p =
        started(
            builder()
                .step(5L)
                .metadataEndpoint("10.0.0.1:5555")
                .deviceId(2)
                .tensor("w", DType.F32, Shape.of(4, 4), new long[] {0, 0}, Shape.of(4, 2), left)
                .tensor("w", DType.F32, Shape.of(4, 4), new long[] {0, 2}, Shape.of(4, 2), right)
                .tensor("norm", DType.F32, Shape.of(4), new long[] {0}, Shape.of(4), norm));

    List<SourceRecord> ready = store.listReady(IDENTITY, FRESH);
    assertEquals(1, ready.size());
    assertEquals("w0", ready.get(0).workerId());
    assertEquals(3, ready.get(0).rank());
    ShardTable t = ShardTableCodec.standard().decode(ready.get(0).blob());
    assertEquals("trainer-0", t.agentName());
    assertEquals("10.0.0.1:5555", t.metadataEndpoint());
    assertArrayEquals(trainer.localMetadata(), t.agentMetadata());
    assertEquals(5L, t.publisherStep());
    assertEquals(
        List.of(
            new PublishedTensor(
                "w",
                "torch.float32",
                4,
                Shape.of(4, 4),
                List.of(
                    new PublishedShard(
                        "trainer-0",
                        2,
                        left.address(),
                        new long[] {0, 0},
                        Shape.of(4, 2),
                        digest.digest(left)),
                    new PublishedShard(
                        "trainer-0",
                        2,
                        right.address(),
                        new long[] {0, 2},
                        Shape.of(4, 2),
                        digest.digest(right)))),
            new PublishedTensor(
                "norm",
                "torch.float32",
                4,
                Shape.of(4),
                List.of(
                    new PublishedShard(
                        "trainer-0",
                        2,
                        norm.address(),
                        new long[] {0},
                        Shape.of(4),
                        digest.digest(norm))))),
        t.tensors());
    assertEquals(t.tensors(), p.table().tensors());
    assertEquals(SourceStatus.READY, p.lastStatus());
    assertTrue(p.digestsEnabled());

    assertArrayEquals(
        right.toArray(ValueLayout.JAVA_BYTE),
        readRemote(t, right.address(), 32),
        "the published memory is registered and readable by a peer");
  }

  @Test
  void aliasesPointIntoOneRegisteredBuffer() {
    // A fused QKV buffer: 2 rows of q, 1 of k, 1 of v, 4 floats each.
    MemorySegment qkv = floats(16, 0);
    Publisher p =
        started(
            builder()
                .buffer(qkv)
                .alias("q", DType.F32, Shape.of(2, 4), new long[] {0, 0}, Shape.of(2, 4), qkv, 0)
                .alias("k", DType.F32, Shape.of(1, 4), new long[] {0, 0}, Shape.of(1, 4), qkv, 32)
                .alias("v", DType.F32, Shape.of(1, 4), new long[] {0, 0}, Shape.of(1, 4), qkv, 48));
    ShardTable t = p.table();
    assertEquals(List.of("q", "k", "v"), t.tensors().stream().map(PublishedTensor::name).toList());
    PublishedShard k = t.tensors().get(1).shards().get(0);
    assertEquals(qkv.address() + 32, k.addr());
    assertEquals(digest.digest(qkv.asSlice(32, 16)), k.digest());
    byte[] got = readRemote(t, k.addr(), 16);
    assertArrayEquals(qkv.asSlice(32, 16).toArray(ValueLayout.JAVA_BYTE), got);
  }

  @Test
  void aliasesOutsideARegisteredBufferAreRefused() {
    MemorySegment qkv = floats(16, 0);
    IllegalArgumentException notAdded =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                builder()
                    .alias(
                        "q", DType.F32, Shape.of(2, 4), new long[] {0, 0}, Shape.of(2, 4), qkv, 0)
                    .start());
    assertTrue(
        notAdded.getMessage().contains("alias 'q'")
            && notAdded.getMessage().contains("buffer(...)"),
        notAdded.getMessage());
    IllegalArgumentException tooFar =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                builder()
                    .buffer(qkv)
                    .alias(
                        "v",
                        DType.F32,
                        Shape.of(2, 4),
                        new long[] {0, 0},
                        Shape.of(2, 4),
                        qkv,
                        48));
    assertTrue(
        tooFar.getMessage().contains("alias 'v': 32 bytes at offset 48 do not fit"),
        tooFar.getMessage());
    assertEquals(List.of(), store.listReady(IDENTITY, FRESH), "nothing published");
  }

  @Test
  void invalidTensorsAreRefusedNamingThem() {
    MemorySegment s = floats(8, 0);
    assertTrue(
        assertThrows(
                IllegalArgumentException.class,
                () ->
                    builder()
                        .tensor(
                            "w", DType.F32, Shape.of(4, 4), new long[] {0, 0}, Shape.of(4, 4), s)
                        .start())
            .getMessage()
            .contains("tensor 'w': 32 bytes given for a f32 shard of shape [4, 4] (64 bytes"));
    assertTrue(
        assertThrows(
                IllegalArgumentException.class,
                () ->
                    builder()
                        .tensor(
                            "w", DType.F32, Shape.of(4, 4), new long[] {0, 3}, Shape.of(4, 2), s)
                        .start())
            .getMessage()
            .contains(
                "tensor 'w': the box at [0, 3] of shape [4, 2] leaves the global shape [4, 4]"));
    assertTrue(
        assertThrows(
                IllegalArgumentException.class,
                () ->
                    builder()
                        .tensor("w", DType.F32, Shape.of(8), new long[] {0}, Shape.of(8), s)
                        .tensor(
                            "w", DType.F32, Shape.of(8), new long[] {0}, Shape.of(8), floats(8, 1))
                        .start())
            .getMessage()
            .contains("the same box is published twice"));
    assertTrue(
        assertThrows(
                IllegalArgumentException.class,
                () ->
                    builder()
                        .tensor("w", DType.F32, Shape.of(8), new long[] {0}, Shape.of(8), s)
                        .tensor(
                            "w",
                            DType.BF16,
                            Shape.of(8),
                            new long[] {0},
                            Shape.of(8),
                            arena.allocate(16))
                        .start())
            .getMessage()
            .contains("tensor 'w' is published as f32 [8] and as bf16 [8]"));
    assertTrue(
        assertThrows(
                IllegalArgumentException.class,
                () ->
                    builder()
                        .tensor(
                            "h",
                            DType.U8,
                            Shape.of(4),
                            new long[] {0},
                            Shape.of(4),
                            MemorySegment.ofArray(new byte[4]))
                        .start())
            .getMessage()
            .contains("native"));
    assertThrows(
        IllegalArgumentException.class,
        () -> Publisher.builder(trainer, store).settings(NO_ENV).start(),
        "identity is required");
  }

  @Test
  void digestsCanBeSwitchedOffAndAreRequiredOtherwise() {
    MemorySegment s = floats(4, 0);
    Settings off = Settings.of(Map.of(), Map.of("MX_RESHARD_PUBLISH_DIGEST", "0"));
    ProviderRegistry<DigestProvider> none =
        ProviderRegistry.of(
            DigestProvider.class, "digest", "mx.digest", "MX_DIGEST", NO_ENV, List.of());
    Publisher p =
        started(
            builder()
                .settings(off)
                .digestProviders(none)
                .tensor("x", DType.F32, Shape.of(4), new long[] {0}, Shape.of(4), s));
    assertFalse(p.digestsEnabled());
    assertNull(p.table().tensors().get(0).shards().get(0).digest());
    assertFalse(
        new String(store.get(IDENTITY, "w0").orElseThrow().blob(), StandardCharsets.UTF_8)
            .contains("digest"),
        "key omitted");
    p.close();

    Settings offByProperty =
        Settings.of(Map.of("mx.publish.digest", "false"), Map.of("MX_RESHARD_PUBLISH_DIGEST", "1"));
    Publisher q =
        started(
            builder()
                .workerId("w1")
                .settings(offByProperty)
                .digestProviders(none)
                .tensor("x", DType.F32, Shape.of(4), new long[] {0}, Shape.of(4), floats(4, 0)));
    assertFalse(q.digestsEnabled(), "the property wins over the environment");
    q.close();

    NoProviderException e =
        assertThrows(
            NoProviderException.class,
            () ->
                builder()
                    .workerId("w2")
                    .digestProviders(none)
                    .tensor("x", DType.F32, Shape.of(4), new long[] {0}, Shape.of(4), floats(4, 0))
                    .start());
    assertTrue(e.getMessage().contains("-Dmx.publish.digest=false"), e.getMessage());
  }

  @Test
  void republishRecomputesDigestsAndCarriesTheNewStep() {
    MemorySegment s = floats(4, 0);
    Publisher p =
        started(
            builder().step(0L).tensor("x", DType.F32, Shape.of(4), new long[] {0}, Shape.of(4), s));
    assertEquals(0L, p.table().publisherStep(), "step 0 is a real step");
    String before = p.table().tensors().get(0).shards().get(0).digest();
    s.setAtIndex(ValueLayout.JAVA_FLOAT, 2, 42f); // the trainer writes new weights in place
    int callsBefore = digest.calls;
    p.republish(1);
    assertEquals(callsBefore + 1, digest.calls);
    ShardTable listed =
        ShardTableCodec.standard().decode(store.listReady(IDENTITY, FRESH).get(0).blob());
    assertEquals(1L, listed.publisherStep());
    String after = listed.tensors().get(0).shards().get(0).digest();
    assertNotEquals(before, after);
    assertEquals(digest.digest(s), after);
    assertEquals(
        s.address(), listed.tensors().get(0).shards().get(0).addr(), "same memory, same address");
  }

  @Test
  void aWithdrawnPublisherStaysStaleThroughHeartbeatsAndRepublicationsAndStillServes() {
    MemorySegment s = floats(4, 0);
    Publisher p =
        started(
            builder().step(0L).tensor("x", DType.F32, Shape.of(4), new long[] {0}, Shape.of(4), s));
    assertEquals(1, store.listReady(IDENTITY, FRESH).size());
    p.withdraw();
    assertEquals(SourceStatus.STALE, store.get(IDENTITY, "w0").orElseThrow().status());
    assertEquals(List.of(), store.listReady(IDENTITY, FRESH), "a withdrawn table is not listed");
    assertEquals(SourceStatus.STALE, p.heartbeatNow(), "a healthy transport does not revive it");
    p.republish(1);
    assertEquals(SourceStatus.STALE, store.get(IDENTITY, "w0").orElseThrow().status());
    assertEquals(SourceStatus.STALE, p.lastStatus());
    ShardTable t = p.table();
    assertArrayEquals(
        readRemote(t, s.address(), 16),
        s.toArray(ValueLayout.JAVA_BYTE),
        "its memory is still served until close");
  }

  @Test
  void heartbeatsRunOnADaemonThreadAndRefreshTheRecord() throws InterruptedException {
    Publisher p =
        started(
            builder()
                .heartbeatInterval(Duration.ofMillis(30))
                .tensor("x", DType.F32, Shape.of(4), new long[] {0}, Shape.of(4), floats(4, 0)));
    long first = store.get(IDENTITY, "w0").orElseThrow().updatedAtMillis();
    Eventually.await(
        Duration.ofSeconds(60),
        "a later heartbeat to be stamped",
        () -> store.get(IDENTITY, "w0").orElseThrow().updatedAtMillis() > first);
    Thread heartbeat =
        Thread.getAllStackTraces().keySet().stream()
            .filter(t -> t.getName().equals("mx-publisher-heartbeat-w0"))
            .findFirst()
            .orElseThrow();
    assertTrue(heartbeat.isDaemon());
    p.close();
    heartbeat.join(Duration.ofSeconds(60));
    assertFalse(heartbeat.isAlive(), "the heartbeat thread stops on close");
    assertEquals(SourceStatus.STALE, store.get(IDENTITY, "w0").orElseThrow().status());
  }

  @Test
  void anInvalidHeartbeatIntervalIsRefusedBeforePublishing() {
    Settings zero = Settings.of(Map.of(), Map.of("MX_HEARTBEAT_INTERVAL_SECS", "0"));
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                Publisher.builder(trainer, store)
                    .identity(IDENTITY)
                    .settings(zero)
                    .digestProviders(digests())
                    .tensor("x", DType.F32, Shape.of(4), new long[] {0}, Shape.of(4), floats(4, 0))
                    .start());
    assertTrue(e.getMessage().contains("MX_HEARTBEAT_INTERVAL_SECS"), e.getMessage());
    assertEquals(List.of(), store.listReady(IDENTITY, FRESH));
    assertEquals(0, store.listReady(IDENTITY, FRESH, false).size());
  }

  @Test
  void anUnhealthyTransportHeartbeatsStaleUntilItRecovers() {
    Publisher p =
        started(
            builder()
                .tensor("x", DType.F32, Shape.of(4), new long[] {0}, Shape.of(4), floats(4, 0)));
    // A real data-plane failure on the trainer's transport: a local read from memory whose arena is
    // gone.
    MemorySegment gone;
    MemorySegment scratch;
    MemorySegment good;
    try (Arena doomed = Arena.ofShared()) {
      gone = doomed.allocate(64);
      trainer.register(gone);
      // Allocated while the doomed memory is still held, so they cannot reuse (and overlap) its
      // address, which stays registered: `good` allocated after the close did, on this machine.
      scratch = arena.allocate(64);
      trainer.register(scratch);
      good = arena.allocate(64);
    }
    assertThrows(
        RuntimeException.class,
        () ->
            trainer.read(
                List.of(new ReadDescriptor("trainer-0", gone.address(), scratch.address(), 64))));
    assertFalse(trainer.isHealthy());

    assertEquals(SourceStatus.STALE, p.heartbeatNow());
    assertEquals(List.of(), store.listReady(IDENTITY, FRESH), "receivers no longer choose it");

    trainer.register(good);
    trainer.read(List.of(new ReadDescriptor("trainer-0", good.address(), scratch.address(), 64)));
    assertTrue(trainer.isHealthy());
    assertEquals(SourceStatus.READY, p.heartbeatNow());
    assertEquals(1, store.listReady(IDENTITY, FRESH).size());
  }

  @Test
  void aStoreThatLostTheRecordGetsTheTableAgainOnTheNextHeartbeat() {
    Publisher p =
        started(
            builder()
                .step(9L)
                .tensor("x", DType.F32, Shape.of(4), new long[] {0}, Shape.of(4), floats(4, 0)));
    byte[] blob = store.get(IDENTITY, "w0").orElseThrow().blob();
    store.remove(IDENTITY, "w0"); // e.g. a Redis restarted without persistence
    assertEquals(SourceStatus.READY, p.heartbeatNow());
    SourceRecord back = store.listReady(IDENTITY, FRESH).get(0);
    assertArrayEquals(blob, back.blob());
    assertEquals(3, back.rank());
  }

  @Test
  void closeMarksStaleWhileTheMemoryIsStillRegisteredThenDeregistersIdempotently() {
    MemorySegment s = floats(4, 0);
    AtomicReference<String> readDuringStale = new AtomicReference<>();
    MetadataStore observing =
        new ObservingStore(
            store,
            (identity, worker, status) -> {
              if (status == SourceStatus.STALE) {
                // At the moment the source is marked STALE its memory must still be served.
                ShardTable t =
                    ShardTableCodec.standard()
                        .decode(store.get(identity, worker).orElseThrow().blob());
                readDuringStale.set(HexBytes.of(readRemote(t, s.address(), 16)));
              }
            });
    Publisher p =
        Publisher.builder(trainer, observing)
            .identity(IDENTITY)
            .workerId("w0")
            .settings(NO_ENV)
            .digestProviders(digests())
            .heartbeatInterval(Duration.ofHours(1))
            .tensor("x", DType.F32, Shape.of(4), new long[] {0}, Shape.of(4), s)
            .start();
    ShardTable t = p.table();
    p.close();
    assertEquals(HexBytes.of(s.toArray(ValueLayout.JAVA_BYTE)), readDuringStale.get());
    assertEquals(SourceStatus.STALE, store.get(IDENTITY, "w0").orElseThrow().status());
    assertEquals(List.of(), store.listReady(IDENTITY, FRESH));
    TransportException gone =
        assertThrows(TransportException.class, () -> readRemote(t, s.address(), 16));
    assertTrue(gone.getMessage().contains("outside every region"), gone.getMessage());
    p.close(); // idempotent
    assertThrows(IllegalStateException.class, () -> p.republish(2));
  }

  @Test
  void publishThenDiscoverRoundTrip() {
    Transport second = new MemTransportProvider().create(TransportConfig.of("trainer-1"));
    toClose.add(second);
    started(
        builder()
            .step(4L)
            .tensor(
                "w", DType.F32, Shape.of(2, 4), new long[] {0, 0}, Shape.of(1, 4), floats(4, 0)));
    Publisher p1 =
        Publisher.builder(second, store)
            .identity(IDENTITY)
            .workerId("w1")
            .rank(1)
            .settings(NO_ENV)
            .digestProviders(digests())
            .heartbeatInterval(Duration.ofHours(1))
            .step(4L)
            .tensor(
                "w", DType.F32, Shape.of(2, 4), new long[] {1, 0}, Shape.of(1, 4), floats(4, 10))
            .start();
    toClose.add(p1);
    List<ShardTable> tables = Discovery.on(store).await(IDENTITY, 2, Duration.ofSeconds(5));
    assertEquals(
        List.of("trainer-0", "trainer-1"),
        tables.stream().map(ShardTable::agentName).sorted().toList());
    ShardTable fromP1 =
        tables.stream().filter(t -> t.agentName().equals("trainer-1")).findFirst().orElseThrow();
    assertEquals(p1.table().tensors(), fromP1.tensors());
    PublishedShard shard = fromP1.tensors().get(0).shards().get(0);
    byte[] bytes = readRemote(fromP1, shard.addr(), 16);
    assertEquals(
        shard.digest(),
        digest.digest(MemorySegment.ofArray(bytes)),
        "what a receiver reads verifies");
  }

  /** Hex of bytes, for readable assertion messages. */
  private static final class HexBytes {
    static String of(byte[] b) {
      return java.util.HexFormat.of().formatHex(b);
    }
  }

  @Test
  void tileDigestsCoverEveryShardLargerThanOneTileEachTileDigestedAsARegionOfItsOwn() {
    MemorySegment big = floats(16, 0); // 64 bytes in tiles of 24: 24 + 24 + 16
    MemorySegment small = floats(4, 9); // 16 bytes: one tile, so no tile digests
    Settings tiles = Settings.of(Map.of(Publisher.TILE_BYTES_PROPERTY, "24"), Map.of());
    started(
        builder()
            .settings(tiles)
            .digestProviders(digests())
            .tensor("w", DType.F32, Shape.of(16), new long[] {0}, Shape.of(16), big)
            .tensor("norm", DType.F32, Shape.of(4), new long[] {0}, Shape.of(4), small));
    ShardTable t =
        ShardTableCodec.standard().decode(store.listReady(IDENTITY, FRESH).get(0).blob());
    PublishedShard w = t.tensors().get(0).shards().get(0);
    assertEquals(digest.digest(big), w.digest());
    assertEquals(24, w.tiles().tileBytes());
    assertEquals(
        List.of(
            digest.digest(big.asSlice(0, 24)),
            digest.digest(big.asSlice(24, 24)),
            digest.digest(big.asSlice(48, 16))),
        w.tiles().digests());
    assertEquals(null, t.tensors().get(1).shards().get(0).tiles());

    Settings bad = Settings.of(Map.of(Publisher.TILE_BYTES_PROPERTY, "-1"), Map.of());
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                builder()
                    .settings(bad)
                    .digestProviders(digests())
                    .tensor("w", DType.F32, Shape.of(16), new long[] {0}, Shape.of(16), big)
                    .start());
    assertTrue(e.getMessage().contains(Publisher.TILE_BYTES_PROPERTY), e.getMessage());
  }

  @Test
  void aReplicaIsListedApartWithItsDigestButNoTileDigests() {
    // One buffer holding an owned box and a replica of another rank's box, both larger than a tile.
    MemorySegment buffer = floats(32, 0);
    Settings tiles = Settings.of(Map.of(Publisher.TILE_BYTES_PROPERTY, "24"), Map.of());
    started(
        builder()
            .settings(tiles)
            .digestProviders(digests())
            .buffer(buffer)
            .alias("owned", DType.F32, Shape.of(16), new long[] {0}, Shape.of(16), buffer, 0)
            .alias("replicated", DType.F32, Shape.of(16), new long[] {0}, Shape.of(16), buffer, 64)
            .replica("replicated", new long[] {0}));
    ShardTable t =
        ShardTableCodec.standard().decode(store.listReady(IDENTITY, FRESH).get(0).blob());
    PublishedShard owned = t.tensors().get(0).shards().get(0);
    assertEquals(List.of("owned"), t.tensors().stream().map(PublishedTensor::name).toList());
    assertEquals(1, t.replicas().size(), "the replica is listed apart from the tensors");
    assertEquals("replicated", t.replicas().get(0).tensor());
    PublishedShard replica = t.replicas().get(0).shard();
    assertEquals(t.agentName(), replica.agentName());
    assertEquals(3, owned.tiles().digests().size());
    assertEquals(digest.digest(buffer.asSlice(64, 64)), replica.digest());
    assertEquals(null, replica.tiles(), "a replica is read with its owner's tiles");
    assertEquals(buffer.address() + 64, replica.addr());
    IllegalArgumentException none =
        assertThrows(IllegalArgumentException.class, () -> builder().replica("w", new long[] {0}));
    assertTrue(none.getMessage().contains("'w'"), none.getMessage());
  }
}
