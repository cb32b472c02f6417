package dev.mx.refit.publish;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.digest.DigestProvider;
import dev.mx.api.error.TransportException;
import dev.mx.api.metadata.PublishedShard;
import dev.mx.api.metadata.ShardTable;
import dev.mx.api.spi.ProviderRegistry;
import dev.mx.api.transport.MemoryRegistration;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.api.util.Settings;
import dev.mx.metadata.memory.MemoryMetadataStore;
import dev.mx.transport.mem.MemTransportProvider;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A publisher serving memory the caller allocated (and registered) through the transport, over the
 * mem transport.
 */
class PublisherAllocatedBufferTest {
  private static final Settings NO_ENV = Settings.of(Map.of(), Map.of());

  private final Transport trainer =
      new MemTransportProvider().create(TransportConfig.of("trainer-0"));
  private final Transport receiver =
      new MemTransportProvider().create(TransportConfig.of("receiver-0"));
  private final MemoryMetadataStore store =
      new MemoryMetadataStore("publisher-alloc-" + UUID.randomUUID());
  private final Sha256TestDoubleDigestProvider digest = new Sha256TestDoubleDigestProvider();

  @AfterEach
  void closeAll() {
    receiver.close();
    trainer.close();
    store.close();
  }

  private byte[] readRemote(ShardTable t, long addr, int nbytes) {
    if (!receiver.isConnected(t.agentName())) {
      receiver.connect(t.agentName(), t.agentMetadata());
    }
    try (MemoryRegistration dst = receiver.allocate(nbytes)) {
      receiver.read(List.of(new ReadDescriptor(t.agentName(), addr, dst.address(), nbytes)));
      return dst.segment().asSlice(0, nbytes).toArray(ValueLayout.JAVA_BYTE);
    }
  }

  @Test
  void servesAnAllocatedBufferWithoutRegisteringItAgainAndLeavesItRegisteredOnClose() {
    MemoryRegistration qkv = trainer.allocate(64);
    for (int i = 0; i < 16; i++) {
      qkv.segment().setAtIndex(ValueLayout.JAVA_FLOAT, i, 10 + i);
    }
    Publisher p =
        Publisher.builder(trainer, store)
            .identity("model=tiny;role=trainer")
            .workerId("w0")
            .settings(NO_ENV)
            .heartbeatInterval(Duration.ofHours(1))
            .digestProviders(
                ProviderRegistry.of(
                    DigestProvider.class,
                    "digest",
                    "mx.digest",
                    "MX_DIGEST",
                    NO_ENV,
                    List.<DigestProvider>of(digest)))
            .buffer(qkv)
            .alias(
                "q", DType.F32, Shape.of(2, 4), new long[] {0, 0}, Shape.of(2, 4), qkv.segment(), 0)
            .alias(
                "k",
                DType.F32,
                Shape.of(1, 4),
                new long[] {0, 0},
                Shape.of(1, 4),
                qkv.segment(),
                32)
            .start();
    ShardTable t = p.table();
    PublishedShard k = t.tensors().get(1).shards().get(0);
    assertEquals(qkv.address() + 32, k.addr());
    assertEquals(digest.digest(qkv.segment().asSlice(32, 16)), k.digest());
    assertArrayEquals(
        qkv.segment().asSlice(32, 16).toArray(ValueLayout.JAVA_BYTE), readRemote(t, k.addr(), 16));

    p.close();
    // The publisher did not own the registration: the memory is still served until its owner closes
    // it.
    assertArrayEquals(
        qkv.segment().asSlice(0, 16).toArray(ValueLayout.JAVA_BYTE),
        readRemote(t, qkv.address(), 16),
        "closing the publisher must not deregister memory it was handed already registered");
    qkv.close();
    TransportException gone =
        assertThrows(TransportException.class, () -> readRemote(t, qkv.address(), 16));
    assertTrue(gone.getMessage().contains("outside every region"), gone.getMessage());
  }

  @Test
  void aliasesOutsideEveryBufferAreStillRefused() {
    MemoryRegistration small = trainer.allocate(16);
    MemorySegment other = trainer.allocate(16).segment();
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                Publisher.builder(trainer, store)
                    .identity("x")
                    .settings(NO_ENV)
                    .digests(false)
                    .buffer(small)
                    .alias("w", DType.F32, Shape.of(4), new long[] {0}, Shape.of(4), other, 0)
                    .start());
    assertTrue(e.getMessage().contains("alias 'w'"), e.getMessage());
  }
}
