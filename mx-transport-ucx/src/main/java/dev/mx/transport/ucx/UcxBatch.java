package dev.mx.transport.ucx;

import dev.mx.api.transport.PendingRead;
import dev.mx.api.transport.ReadDescriptor;
import java.lang.foreign.MemorySegment;
import java.util.List;
import org.openucx.jucx.UcxCallback;
import org.openucx.jucx.ucp.UcpRequest;

/**
 * GETs from one peer, in two phases: {@link UcxTransport#start} issues only the probe (a GET of the peer's directory
 * slots this batch depends on); {@link UcxTransport#await} checks the probe of every batch, then issues the data GETs.
 */
final class UcxBatch implements PendingRead {
  final UcxPeer peer;
  final List<ReadDescriptor> group;
  final long[] src;
  final long[] dst;
  final long[] len;
  /** Index of each descriptor's source region in the peer's metadata. */
  final int[] region;
  final boolean[] regionUsed;
  final long bytes;
  UcxConnection connection;
  /** Where the probe lands; freed by the GC (closing a shared arena per batch costs a thread handshake). */
  MemorySegment directoryImage;
  Flush probe;
  Flush data;
  /** Failure of the current phase (connection or flush), once settled. */
  String failure;

  UcxBatch(UcxPeer peer, List<ReadDescriptor> group, long[] src, long[] dst, long[] len, int[] region,
      boolean[] regionUsed, long bytes) {
    this.peer = peer;
    this.group = group;
    this.src = src;
    this.dst = dst;
    this.len = len;
    this.region = region;
    this.regionUsed = regionUsed;
    this.bytes = bytes;
  }

  /**
   * Whether the current phase has finished, successfully or not. A failed endpoint wins over a completed
   * flush: when UCX fails an endpoint it purges what was outstanding and completes its flushes without an
   * error (in the same progress call that reports the failure), so such a flush proves nothing.
   */
  boolean settled() {
    if (connection.failure != null) {
      failure = connection.failure;
      return true;
    }
    Flush f = data != null ? data : probe;
    if (f.done) {
      if (f.failure != null && failure == null) {
        failure = f.failure;
      }
      return true;
    }
    return false;
  }

  /** What the batch was doing, for messages. */
  String phase() {
    return data != null ? "reading" : "checking the peer's regions, nothing issued yet";
  }

  @Override
  public String session() {
    return peer.session;
  }

  @Override
  public int descriptorCount() {
    return len.length;
  }

  @Override
  public long bytes() {
    return bytes;
  }

  /** Completion of one flush on an endpoint: everything issued on it before the flush has landed. */
  static final class Flush extends UcxCallback {
    volatile boolean done;
    volatile String failure;

    @Override
    public void onSuccess(UcpRequest request) {
      done = true;
    }

    @Override
    public void onError(int status, String message) {
      failure = message + " (UCS status " + status + ")";
      done = true;
    }
  }
}
