package dev.mx.rl;

import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;

/**
 * A refused RefitService call: the reference status and exact message ({@link RefitFailure}), and
 * what it concerns ({@link #subject()}, e.g. {@code version 'edf6993a', worker 'trainer0'}), which
 * the server logs and sends as the {@value #SUBJECT_TRAILER} trailer.
 */
public final class RefitException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** The trailer naming what a refused call concerns; the status message stays the reference's. */
  public static final String SUBJECT_TRAILER = "mx-refit-subject";

  static final Metadata.Key<String> SUBJECT_KEY =
      Metadata.Key.of(SUBJECT_TRAILER, Metadata.ASCII_STRING_MARSHALLER);

  private final RefitFailure failure;
  private final String subject;

  RefitException(RefitFailure failure, String message, String subject) {
    super(message + (subject.isEmpty() ? "" : " (" + subject + ")"));
    this.failure = failure;
    this.subject = subject;
  }

  public RefitFailure failure() {
    return failure;
  }

  /** The exact status message, as the reference server sends it. */
  public String statusMessage() {
    String m = getMessage();
    return subject.isEmpty() ? m : m.substring(0, m.length() - subject.length() - 3);
  }

  /** What the failure concerns, or "" when nothing narrower than the request. */
  public String subject() {
    return subject;
  }

  /** As a gRPC status with the exact message and the subject trailer. */
  public StatusRuntimeException toStatus() {
    Metadata trailers = new Metadata();
    if (!subject.isEmpty()) {
      trailers.put(SUBJECT_KEY, RefitText.asciiSafe(subject));
    }
    return Status.fromCode(failure.code())
        .withDescription(statusMessage())
        .withCause(getCause())
        .asRuntimeException(trailers);
  }
}
