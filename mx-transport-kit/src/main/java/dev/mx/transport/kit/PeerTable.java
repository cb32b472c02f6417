package dev.mx.transport.kit;

import dev.mx.api.annotation.Internal;
import dev.mx.api.error.TransportException;
import dev.mx.api.util.Closeables;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A backend's connected peers by session: connecting a session again closes the peer it replaces, a
 * read naming a session never connected fails naming it, and the endpoint's close closes them all.
 *
 * @param <P> the backend's peer (its mappings, its connection); closed when it is {@link
 *     AutoCloseable}
 */
@Internal
public final class PeerTable<P> {
  private final String transport;
  private final Map<String, P> bySession = new ConcurrentHashMap<>();

  /** The peers of a transport named {@code transport} (named in errors). */
  public PeerTable(String transport) {
    this.transport = transport;
  }

  private static void close(Object peer) {
    if (peer instanceof AutoCloseable c) {
      Closeables.closeAll(c);
    }
  }

  /** The error for a session that was never connected. */
  static TransportException unknownPeer(String transport, String session) {
    return new TransportException(
        session,
        transport
            + " transport: no peer connected under session '"
            + session
            + "' (connect it with the metadata from its shard table first)");
  }

  /** Connects {@code peer} under {@code session}, closing the peer it replaces. */
  public void put(String session, P peer) {
    close(bySession.put(session, peer));
  }

  /**
   * The peer connected under {@code session}.
   *
   * @throws TransportException naming the session when none is
   */
  public P get(String session) {
    P peer = bySession.get(session);
    if (peer == null) {
      throw unknownPeer(transport, session);
    }
    return peer;
  }

  /** The peer connected under {@code session}, or null. */
  public P find(String session) {
    return bySession.get(session);
  }

  /** The sessions connected now. */
  public List<String> sessions() {
    return List.copyOf(bySession.keySet());
  }

  public boolean contains(String session) {
    return bySession.containsKey(session);
  }

  public int size() {
    return bySession.size();
  }

  /** The peers now. */
  public List<P> all() {
    return List.copyOf(bySession.values());
  }

  /**
   * Forgets every peer and closes each (the endpoint's close), returning what failed instead of
   * stopping at it.
   */
  public List<RuntimeException> closeAll() {
    List<P> closing = new ArrayList<>(bySession.values());
    bySession.clear();
    List<RuntimeException> failures = new ArrayList<>();
    for (P p : closing) {
      try {
        close(p);
      } catch (RuntimeException e) {
        failures.add(e);
      }
    }
    return failures;
  }
}
