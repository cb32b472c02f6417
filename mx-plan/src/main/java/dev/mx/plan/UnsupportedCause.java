package dev.mx.plan;

/**
 * One grouped cause of unplannable sources (ModelExpress; ARCHITECTURE §7.3 {@code
 * summarize_unsupported}): the cause and how many share it.
 */
public record UnsupportedCause(String cause, int count) {

  @Override
  public String toString() {
    return count + " x " + cause;
  }
}
