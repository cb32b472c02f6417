package dev.mx.rl.client;

import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;

/**
 * A control-plane call that failed: the RPC, the server's status and exact message, and what the
 * server said it concerns (its {@code mx-refit-subject} trailer, when an mx server answered).
 */
public final class RefitCallException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private static final Metadata.Key<String> SUBJECT =
      Metadata.Key.of("mx-refit-subject", Metadata.ASCII_STRING_MARSHALLER);

  private final String rpc;
  private final transient Status status;
  private final String subject;

  RefitCallException(String rpc, String target, StatusRuntimeException e) {
    super(message(rpc, target, e), e);
    this.rpc = rpc;
    this.status = e.getStatus();
    this.subject = subject(e);
  }

  private static String subject(StatusRuntimeException e) {
    Metadata t = e.getTrailers();
    String s = t == null ? null : t.get(SUBJECT);
    return s == null ? "" : s;
  }

  private static String message(String rpc, String target, StatusRuntimeException e) {
    String s = subject(e);
    return rpc
        + " to "
        + target
        + " failed: "
        + e.getStatus().getCode()
        + " "
        + e.getStatus().getDescription()
        + (s.isEmpty() ? "" : " (" + s + ")");
  }

  public String rpc() {
    return rpc;
  }

  public Status.Code code() {
    return status.getCode();
  }

  /** The server's exact message. */
  public String statusMessage() {
    return status.getDescription();
  }

  /** What the call concerns as the server named it, or "". */
  public String subject() {
    return subject;
  }
}
