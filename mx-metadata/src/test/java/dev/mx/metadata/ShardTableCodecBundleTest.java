package dev.mx.metadata;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mx.api.metadata.ShardTable;
import dev.mx.transport.kit.TransportBundle;
import java.util.Base64;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A publisher serving several transports: agent_meta_b64 keeps the primary's blob, the rest ride
 * along.
 */
class ShardTableCodecBundleTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private final ShardTableCodec codec = ShardTableCodec.standard();
  private final byte[] ucx = {1, 2, 3, 4, 5};
  private final byte[] shm = {9, 8, 7};

  private ShardTable with(byte[] agentMetadata) {
    ShardTable t = TestTables.table("trainer-0", 2, 7L, true);
    return new ShardTable(
        t.agentName(), t.metadataEndpoint(), agentMetadata, t.tensors(), t.publisherStep());
  }

  @Test
  void aBundleIsWrittenAsThePrimaryBlobPlusAnOptionalKeyAndReadBackWhole() throws Exception {
    byte[] bundle =
        TransportBundle.encode(
            List.of(new TransportBundle.Entry("ucx", ucx), new TransportBundle.Entry("shm", shm)));
    byte[] json = codec.encode(with(bundle));
    JsonNode n = JSON.readTree(json);
    assertArrayEquals(ucx, Base64.getDecoder().decode(n.get("agent_meta_b64").asText()));
    assertEquals("ucx", n.get(ShardTableCodec.AGENT_META_EXTRA).get("primary").asText());
    assertArrayEquals(
        shm,
        Base64.getDecoder()
            .decode(n.get(ShardTableCodec.AGENT_META_EXTRA).get("others").get("shm").asText()));
    assertArrayEquals(bundle, codec.decode(json).agentMetadata());
    assertArrayEquals(bundle, codec.decodeHeader(json).agentMetadata());
  }

  @Test
  void everyOtherKeyIsByteIdenticalToTheTableOfThePrimaryAlone() {
    byte[] bundle =
        TransportBundle.encode(
            List.of(new TransportBundle.Entry("ucx", ucx), new TransportBundle.Entry("shm", shm)));
    String withBundle =
        new String(codec.encode(with(bundle)), java.nio.charset.StandardCharsets.UTF_8);
    String alone = new String(codec.encode(with(ucx)), java.nio.charset.StandardCharsets.UTF_8);
    // The optional key is appended last: removing it gives the single-transport document exactly.
    int at = withBundle.indexOf(",\"" + ShardTableCodec.AGENT_META_EXTRA + "\"");
    assertEquals(alone, withBundle.substring(0, at) + "}");
    assertFalse(alone.contains(ShardTableCodec.AGENT_META_EXTRA));
  }

  @Test
  void aPlainBlobStaysPlain() {
    assertArrayEquals(ucx, codec.decode(codec.encode(with(ucx))).agentMetadata());
  }
}
