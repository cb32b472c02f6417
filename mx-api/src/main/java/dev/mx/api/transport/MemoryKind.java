package dev.mx.api.transport;

import java.util.Locale;

/**
 * Where a region's bytes live: host memory (the CPU may dereference its segment) or the memory of
 * one accelerator ({@code cuda:0}), whose segment carries only an address and a length and must
 * never be dereferenced on the CPU. Carried by {@link MemoryRegistration#memoryKind()} so that
 * planners, digests and casts pick a device implementation without {@code mx-api} depending on any
 * accelerator library.
 *
 * @param location host or device
 * @param ordinal the device ordinal (0-based); -1 for host memory
 */
public record MemoryKind(Location location, int ordinal) {

  /** The two places memory may live. */
  public enum Location {
    HOST,
    DEVICE
  }

  /** Host memory. */
  public static final MemoryKind HOST = new MemoryKind(Location.HOST, -1);

  public MemoryKind {
    if (location == null) {
      throw new IllegalArgumentException("memory kind needs a location");
    }
    if (location == Location.HOST && ordinal != -1) {
      throw new IllegalArgumentException("host memory has no device ordinal, got " + ordinal);
    }
    if (location == Location.DEVICE && ordinal < 0) {
      throw new IllegalArgumentException("device ordinal must be 0 or more, got " + ordinal);
    }
  }

  /** The memory of CUDA device {@code ordinal}. */
  public static MemoryKind device(int ordinal) {
    return new MemoryKind(Location.DEVICE, ordinal);
  }

  /** Whether the CPU must not dereference this memory. */
  public boolean isDevice() {
    return location == Location.DEVICE;
  }

  /**
   * Parses {@code host}, {@code cpu}, {@code cuda} (device 0) or {@code cuda:N}, as {@code
   * --device} takes it.
   *
   * @throws IllegalArgumentException naming the text when it is none of these
   */
  public static MemoryKind parse(String text) {
    String t = text.strip().toLowerCase(Locale.ROOT);
    if (t.equals("host") || t.equals("cpu")) {
      return HOST;
    }
    if (t.equals("cuda")) {
      return device(0);
    }
    if (t.startsWith("cuda:")) {
      try {
        return device(Integer.parseInt(t.substring(5)));
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException(
            "memory kind '" + text + "': device ordinal is not a number", e);
      }
    }
    throw new IllegalArgumentException(
        "memory kind '" + text + "' is none of host, cpu, cuda, cuda:N");
  }

  /** {@code host} or {@code cuda:N}, the form {@link #parse} reads. */
  @Override
  public String toString() {
    return isDevice() ? "cuda:" + ordinal : "host";
  }
}
