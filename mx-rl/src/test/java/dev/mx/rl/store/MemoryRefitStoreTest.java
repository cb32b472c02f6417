package dev.mx.rl.store;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.WeightVersionException;
import dev.mx.rl.RefitBackend;
import dev.mx.rl.RefitClock;
import dev.mx.rl.RefitServer;
import dev.mx.rl.memory.MemoryRefitBackend;
import org.junit.jupiter.api.Test;

/** The mx:// store over a memory: server, including one restarted (and so emptied) mid-run. */
class MemoryRefitStoreTest extends AbstractRefitStoreTest {

  @Override
  RefitBackend newBackend(RefitClock clock) {
    return new MemoryRefitBackend(clock);
  }

  @Test
  void aReceiverOfAMemoryServerRestartedMidRunFailsSayingTheServerLostItsState() {
    MetadataStore p0 = open();
    MetadataStore p1 = open();
    MetadataStore recv = open();
    publishTwoSlots(p0, p1, 4);
    recv.versions().versions(model);
    int port = server.port();
    server.close();
    backend.close();
    backend = newBackend(clock);
    server = RefitServer.builder().port(port).backend(backend).clock(clock).build();
    RuntimeException e =
        assertThrows(RuntimeException.class, () -> recv.versions().versions(model));
    assertTrue(e.getMessage().contains("lost its state"), e.getMessage());
    assertTrue(e.getMessage().contains("127.0.0.1:" + port), e.getMessage());
    WeightVersionException publish =
        assertThrows(WeightVersionException.class, () -> p0.versions().release(model, "step-4"));
    assertTrue(publish.getMessage().contains("step-4"), publish.getMessage());
    assertTrue(publish.getMessage().contains("lost its state"), publish.getMessage());
  }
}
