package dev.mx.rl;

import io.grpc.Status;

/**
 * Every failure RefitService answers with: its gRPC status code and its exact message, as
 * ModelExpress's reference server words them (SPEC.md section 10; clients and operators match on
 * them). The Redis backend's scripts answer with these constant names.
 */
public enum RefitFailure {
  /** {@code %s} is the field's name, e.g. {@code shard.worker_id}. */
  REQUIRED(Status.Code.INVALID_ARGUMENT, "%s is required"),
  WORKER_REQUIRED(Status.Code.INVALID_ARGUMENT, "worker is required"),
  ROLE_UNSPECIFIED(Status.Code.INVALID_ARGUMENT, "worker.role must be specified"),
  TTL_ZERO(Status.Code.INVALID_ARGUMENT, "ttl_seconds must be greater than zero"),
  BASE_FOR_FULL_TENSOR(
      Status.Code.INVALID_ARGUMENT, "base_version_id must be omitted for FULL_TENSOR"),
  BASE_MISSING_FOR_XOR_DELTA(
      Status.Code.INVALID_ARGUMENT, "base_version_id is required for XOR_DELTA"),
  FORMAT_UNSPECIFIED(Status.Code.INVALID_ARGUMENT, "payload_format must be specified"),
  SLOTS_EMPTY(Status.Code.INVALID_ARGUMENT, "expected_source_slots must not be empty"),
  SLOTS_DUPLICATE(
      Status.Code.INVALID_ARGUMENT, "expected_source_slots must not contain duplicates"),
  SHARD_REQUIRED(Status.Code.INVALID_ARGUMENT, "shard is required"),
  SLOT_NOT_EXPECTED(
      Status.Code.INVALID_ARGUMENT, "source_slot_id is not required by the weight version"),
  /** {@code %s} is the uid quoted as Rust's {@code {:?}} does ({@link RefitText#debugQuoted}). */
  VERSION_UID_NOT_FOUND(Status.Code.NOT_FOUND, "weight version UID %s was not found"),
  VERSION_NOT_FOUND(Status.Code.NOT_FOUND, "weight version was not found"),
  SHARD_NOT_FOUND(Status.Code.NOT_FOUND, "weight version shard not found"),
  /** {@code %s} is the lease id, quoted as {@link #VERSION_UID_NOT_FOUND}'s uid. */
  LEASE_NOT_FOUND(Status.Code.NOT_FOUND, "version lease %s was not found"),
  MANIFEST_NOT_FOUND(Status.Code.NOT_FOUND, "manifest was not found"),
  XOR_BASE_NOT_READY(
      Status.Code.FAILED_PRECONDITION,
      "XOR_DELTA base version must be READY and have the same model_name"),
  VERSION_NOT_READY(Status.Code.FAILED_PRECONDITION, "only a READY weight version can be deleted"),
  WORKER_NOT_LIVE(Status.Code.FAILED_PRECONDITION, "worker registration is missing or expired"),
  MODEL_MISMATCH(Status.Code.FAILED_PRECONDITION, "worker and weight version model_name differ"),
  NOT_ACCEPTING_SHARDS(
      Status.Code.FAILED_PRECONDITION, "weight version does not accept shard publication"),
  NOT_PUBLISHER(Status.Code.FAILED_PRECONDITION, "only the publishing worker can delete its shard"),
  NOT_RELEASING(
      Status.Code.FAILED_PRECONDITION,
      "weight version must be RELEASING before its shards can be deleted"),
  SHARD_CHANGED(
      Status.Code.FAILED_PRECONDITION, "weight version shard changed while it was being deleted"),
  ACTIVE_LEASE(Status.Code.FAILED_PRECONDITION, "weight version has an active lease"),
  NOT_ACCEPTING_LEASES(
      Status.Code.FAILED_PRECONDITION, "weight version does not accept this lease registration"),
  NOT_GENERATOR(
      Status.Code.FAILED_PRECONDITION, "only a generator worker can hold a version lease"),
  LEASE_OWNED_ELSEWHERE(
      Status.Code.FAILED_PRECONDITION, "version lease is owned by a different worker"),
  WORKER_CONFLICT(
      Status.Code.ALREADY_EXISTS, "worker_id is already registered with different metadata"),
  IDEMPOTENCY_CONFLICT(
      Status.Code.ALREADY_EXISTS, "idempotency_key was already used for a different WeightVersion"),
  SHARD_CONFLICT(
      Status.Code.ALREADY_EXISTS, "worker and source_slot_id already published different metadata"),
  LEASE_ID_CONFLICT(
      Status.Code.ALREADY_EXISTS, "version lease ID is already used by a different worker"),
  UID_EXHAUSTED(Status.Code.RESOURCE_EXHAUSTED, "could not allocate a unique weight version ID"),
  /** {@code %s} is the backend's own error text. */
  BACKEND_UNAVAILABLE(Status.Code.UNAVAILABLE, "Refit metadata backend error: %s"),
  /** {@code %s} is free text: a corrupt record, an unexpected script answer. */
  INTERNAL(Status.Code.INTERNAL, "%s");

  private final Status.Code code;
  private final String template;

  RefitFailure(Status.Code code, String template) {
    this.code = code;
    this.template = template;
  }

  public Status.Code code() {
    return code;
  }

  /** The exact message; {@code arg} fills the {@code %s} of the parameterized ones. */
  public String message(String arg) {
    return template.contains("%s") ? template.replace("%s", arg) : template;
  }

  /**
   * A failure of this kind; {@code subject} names what is at fault (version, slot, worker, lease)
   * for logs and the {@code mx-refit-subject} trailer, since the reference messages do not.
   */
  public RefitException raise(String subject) {
    return new RefitException(this, message(""), subject);
  }

  /** A parameterized failure ({@link #REQUIRED}, {@link #VERSION_UID_NOT_FOUND}, ...). */
  public RefitException raise(String arg, String subject) {
    return new RefitException(this, message(arg), subject);
  }
}
