package dev.mx.transport.nixl;

import dev.mx.api.transport.PendingRead;

/** One peer's posted group. Mutable fields guarded by the agent lock. */
final class NixlBatch implements PendingRead {
  final String session;
  final String agentName;
  final NixlRequest prepared;
  final int count;
  final long bytes;
  boolean done;
  int status = NixlStatus.IN_PROG;
  String failedCall;

  NixlBatch(String session, String agentName, NixlRequest prepared, int count, long bytes) {
    this.session = session;
    this.agentName = agentName;
    this.prepared = prepared;
    this.count = count;
    this.bytes = bytes;
  }

  @Override
  public String session() {
    return session;
  }

  @Override
  public int descriptorCount() {
    return count;
  }

  @Override
  public long bytes() {
    return bytes;
  }

  String describeBatch() {
    return count
        + " reads ("
        + bytes
        + " bytes) from peer '"
        + session
        + "' (NIXL agent '"
        + agentName
        + "')";
  }
}
