package dev.mx.layout.trainer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.api.transport.MemoryRegistration;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.layout.model.ModelConfigs;
import dev.mx.transport.mem.MemTransportProvider;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Trainer buffers taken from a transport's allocate (the real mem transport) instead of an arena.
 */
class TrainerBuffersAllocatorTest {

  private static TrainerRankLayout rank() {
    return new TrainerTopology.Megatron(2, 1, 1)
        .layout(ModelConfigs.load("tiny-llama"), DType.BF16)
        .ranks()
        .get(1);
  }

  /**
   * Records what it handed out and which were closed (a test double around the real transport's
   * allocate).
   */
  private static final class RecordingAllocator {
    final Transport transport;
    final List<MemoryRegistration> handedOut = new ArrayList<>();
    final List<Long> closed = new ArrayList<>();
    int failAt = -1;

    RecordingAllocator(Transport transport) {
      this.transport = transport;
    }

    MemoryRegistration allocate(long bytes) {
      if (handedOut.size() == failAt) {
        throw new IllegalStateException("allocator test double: out of memory");
      }
      MemoryRegistration r = transport.allocate(bytes);
      // Dirty it: the buffers must come out zeroed whatever the allocator returns.
      r.segment().fill((byte) 0x7F);
      MemoryRegistration tracked =
          new MemoryRegistration() {
            @Override
            public MemorySegment segment() {
              return r.segment();
            }

            @Override
            public void close() {
              closed.add(r.address());
              r.close();
            }
          };
      handedOut.add(tracked);
      return tracked;
    }
  }

  @Test
  void buffersLiveInTheAllocatedMemoryFillLikeArenaBuffersAndCloseTheirRegistrations() {
    TrainerRankLayout layout = rank();
    try (Transport t = new MemTransportProvider().create(TransportConfig.of("trainer-1"));
        TrainerBuffers arena = TrainerBuffers.allocate(layout)) {
      RecordingAllocator alloc = new RecordingAllocator(t);
      TrainerBuffers buffers = TrainerBuffers.allocate(layout, alloc::allocate);
      Map<String, MemoryRegistration> regs = buffers.registrations();
      assertEquals(layout.buffers().size(), regs.size());
      assertEquals(alloc.handedOut, List.copyOf(regs.values()));
      for (LocalBuffer b : layout.buffers()) {
        MemorySegment s = buffers.segment(b.name());
        assertEquals(regs.get(b.name()).address(), s.address(), b.name());
        assertEquals(b.byteSize(), s.byteSize(), b.name());
        assertTrue(
            s.byteSize() == 0
                || s.elements(ValueLayout.JAVA_BYTE)
                    .allMatch(x -> x.get(ValueLayout.JAVA_BYTE, 0) == 0),
            "buffer " + b.name() + " is not zeroed");
      }
      buffers.fill(3, 1);
      arena.fill(3, 1);
      for (LocalBuffer b : layout.buffers()) {
        assertArrayEquals(
            arena.segment(b.name()).toArray(ValueLayout.JAVA_BYTE),
            buffers.segment(b.name()).toArray(ValueLayout.JAVA_BYTE),
            b.name());
      }
      buffers.close();
      buffers.close(); // idempotent
      List<Long> reversed =
          alloc.handedOut.reversed().stream().map(MemoryRegistration::address).toList();
      assertEquals(reversed, alloc.closed, "every registration closed once, in reverse order");
      assertThrows(IllegalStateException.class, buffers::registrations);
    }
  }

  @Test
  void aFailedAllocationReleasesWhatWasAllocated() {
    TrainerRankLayout layout = rank();
    try (Transport t = new MemTransportProvider().create(TransportConfig.of("trainer-1"))) {
      RecordingAllocator alloc = new RecordingAllocator(t);
      alloc.failAt = 2;
      IllegalStateException e =
          assertThrows(
              IllegalStateException.class, () -> TrainerBuffers.allocate(layout, alloc::allocate));
      assertTrue(e.getMessage().contains("out of memory"), e.getMessage());
      assertEquals(2, alloc.handedOut.size());
      assertEquals(
          alloc.handedOut.reversed().stream().map(MemoryRegistration::address).toList(),
          alloc.closed);
    }
  }
}
