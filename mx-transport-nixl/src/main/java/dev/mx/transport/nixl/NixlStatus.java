package dev.mx.transport.nixl;

/** NIXL's C status codes ({@code nixl_capi_status_t}) and their names, for messages. */
final class NixlStatus {
  static final int SUCCESS = 0;
  static final int IN_PROG = 1;
  static final int ERROR_INVALID_PARAM = -1;
  static final int ERROR_BACKEND = -2;
  static final int ERROR_INVALID_STATE = -3;
  static final int ERROR_EXCEPTION = -4;
  static final int ERROR_NO_TELEMETRY = -5;
  static final int ERROR_NOT_FOUND = -6;

  private NixlStatus() {}

  /** The code's name, e.g. {@code ERROR_BACKEND}. */
  static String name(int status) {
    return switch (status) {
      case SUCCESS -> "SUCCESS";
      case IN_PROG -> "IN_PROG";
      case ERROR_INVALID_PARAM -> "ERROR_INVALID_PARAM";
      case ERROR_BACKEND -> "ERROR_BACKEND";
      case ERROR_INVALID_STATE -> "ERROR_INVALID_STATE";
      case ERROR_EXCEPTION -> "ERROR_EXCEPTION";
      case ERROR_NO_TELEMETRY -> "ERROR_NO_TELEMETRY";
      case ERROR_NOT_FOUND -> "ERROR_NOT_FOUND";
      default -> "UNKNOWN";
    };
  }

  /** {@code "NIXL status -2 (ERROR_BACKEND)"}. */
  static String describe(int status) {
    return "NIXL status " + status + " (" + name(status) + ")";
  }
}
