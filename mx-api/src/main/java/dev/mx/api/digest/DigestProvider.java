package dev.mx.api.digest;

import dev.mx.api.spi.MxProvider;
import dev.mx.api.spi.ProviderRegistry;
import java.lang.foreign.MemorySegment;

/**
 * Computes the shard digest: 32 lowercase hex characters that depend only on the bytes, never on
 * where they sit. Found through {@link java.util.ServiceLoader}; override with {@code
 * -Dmx.digest=NAME}.
 */
public abstract class DigestProvider extends MxProvider {

  /** The digest of {@code bytes} (any alignment, any length including zero). */
  public abstract String digest(MemorySegment bytes);

  /**
   * An accumulator for the digest of a region of {@code byteCount} bytes fed in pieces at their
   * positions, in any order; empty when this provider cannot combine pieces (the caller then
   * gathers the region and calls {@link #digest}).
   */
  public java.util.Optional<DigestParts> parts(long byteCount) {
    return java.util.Optional.empty();
  }

  /**
   * Readies what the first digests would otherwise pay for: has the JIT compile every kernel this
   * provider may pick (the CPU provider picks one by input size), or loads a device module. May
   * take a second; touches no memory of the caller's; safe to call from any thread, more than once.
   * For a receiver's start, in the background ({@code KernelWarmup}). The default does nothing.
   */
  public void warmUp() {}

  @Override
  public String artifact() {
    return "dev.mx:mx-digest";
  }

  /** The registry of digest providers on the class path. */
  public static ProviderRegistry<DigestProvider> registry() {
    return ProviderRegistry.load(DigestProvider.class, "digest", "mx.digest", "MX_DIGEST");
  }
}
