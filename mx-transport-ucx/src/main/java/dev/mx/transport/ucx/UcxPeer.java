package dev.mx.transport.ucx;

import dev.mx.api.error.TransportException;
import dev.mx.transport.kit.RegionTable;
import java.nio.ByteBuffer;
import org.openucx.jucx.ucp.UcpEndpointParams;

/** A connected peer: its metadata, and the current connection (replaced after a failure). */
final class UcxPeer {
  private final UcxLocal local;
  final String session;
  final UcxPeerMetadata meta;
  final RegionTable regions;
  final long[] cookies;
  final int[] slots;
  UcxConnection connection; // guarded by the worker lock
  private boolean retired; // guarded by the worker lock

  UcxPeer(UcxLocal local, String session, UcxPeerMetadata meta, RegionTable regions) {
    this.local = local;
    this.session = session;
    this.meta = meta;
    this.regions = regions;
    int n = meta.regions().size();
    this.cookies = new long[n];
    this.slots = new int[n];
    for (int i = 0; i < n; i++) {
      cookies[i] = meta.regions().get(i).cookie();
      slots[i] = meta.regions().get(i).slot();
    }
  }

  private static ByteBuffer direct(byte[] bytes) {
    return ByteBuffer.allocateDirect(bytes.length).put(bytes).flip();
  }

  /** Creates the endpoint; the caller holds the worker lock. */
  void open() {
    UcxConnection c = new UcxConnection(local, this);
    UcpEndpointParams params =
        new UcpEndpointParams()
            .setUcpAddress(direct(meta.workerAddress()))
            .setName("mx:" + local.session() + "->" + session);
    if (local.peerErrorHandling()) {
      params
          .setPeerErrorHandlingMode()
          .setErrorHandler((ep, status, message) -> c.fail(status, message));
    }
    try {
      // Reads are requests the peer's serving side answers, so its remote keys are not unpacked.
      c.endpoint = local.worker().newEndpoint(params);
    } catch (RuntimeException e) {
      c.close(true);
      throw new TransportException(
          session, "ucx transport: cannot reach peer '" + session + "': " + e.getMessage(), e);
    }
    connection = c;
  }

  /**
   * The live connection, reconnecting after a failure; counted as in use. The caller holds the
   * worker lock.
   */
  UcxConnection acquire() {
    if (retired) {
      throw new TransportException(
          session,
          "ucx transport: peer '"
              + session
              + "' was reconnected with new metadata while this batch was prepared; prepare it again");
    }
    if (connection == null) {
      open();
    }
    connection.inFlight++;
    return connection;
  }

  /**
   * Replaced by a newer connect(): close as soon as no batch uses the connection. Worker lock held.
   */
  void retire() {
    retired = true;
    if (connection != null) {
      connection.closeWhenIdle = true;
      connection.releaseIfIdle();
      connection = null;
    }
  }

  /**
   * Force-closes a failed connection so nothing it issued lands later; the next batch reconnects.
   */
  void breakConnection(UcxConnection c, String why) {
    if (c.failure == null) {
      c.failure = why;
    }
    c.close(true);
    if (connection == c) {
      connection = null;
    }
  }
}
