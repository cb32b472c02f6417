package dev.mx.bench.suite;

/**
 * The benches' size units. Sizes of buffers and descriptors are binary (KiB, MiB), as the options'
 * {@code k}/{@code m}/{@code g} suffixes are; amounts moved and rates are decimal (GB, GB/s), as
 * network and memory bandwidths are quoted.
 */
final class ByteSizes {

  static final long KIB = 1L << 10;
  static final long MIB = 1L << 20;

  private ByteSizes() {}

  /** A descriptor size as it appears in metric names: {@code 64KiB}, {@code 1MiB}. */
  static String label(long size) {
    return size >= MIB ? size / MIB + "MiB" : size / KIB + "KiB";
  }
}
