package dev.mx.refit.stage;

import dev.mx.api.annotation.Internal;
import dev.mx.api.digest.DigestProvider;
import dev.mx.api.error.DigestMismatchException;
import dev.mx.api.memory.MemoryOps;
import dev.mx.api.plan.Shard;
import dev.mx.refit.reslice.ViewCopy;
import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * The local work of one staged shard, run once its bytes have landed: verify the staged shard
 * against its published digest (when verification applies), then — only then — replay its copies
 * and byte runs out of the staging buffer into the receive buffers or convert staging.
 */
@Internal
public final class StagedWork {
  private final ShardStaging.Staged staged;
  private final MemorySegment staging;
  private final List<ViewCopy> copies;
  private final List<ByteRun> runs;
  private final boolean verify;

  /** Null for host memory. */
  private final MemoryOps device;

  /** The runs as arrays, for one batched device copy. */
  private final long[] runFrom;

  private final MemorySegment[] runDst;
  private final long[] runTo;
  private final long[] runBytes;
  private volatile String expected;

  /** {@code nbytes} from staging byte {@code from} to {@code dst} at byte {@code to}. */
  public record ByteRun(long from, MemorySegment dst, long to, long nbytes) {}

  StagedWork(
      ShardStaging.Staged staged,
      MemorySegment staging,
      List<ViewCopy> copies,
      List<ByteRun> runs,
      boolean verify,
      MemoryOps device) {
    this.device = device;
    int n = runs.size();
    this.runFrom = new long[n];
    this.runDst = new MemorySegment[n];
    this.runTo = new long[n];
    this.runBytes = new long[n];
    for (int i = 0; i < n; i++) {
      ByteRun r = runs.get(i);
      runFrom[i] = r.from();
      runDst[i] = r.dst();
      runTo[i] = r.to();
      runBytes[i] = r.nbytes();
    }
    this.staged = staged;
    this.staging = staging;
    this.copies = List.copyOf(copies);
    this.runs = List.copyOf(runs);
    this.verify = verify;
    this.expected = staged.expectedDigest();
  }

  public ShardStaging.Staged staged() {
    return staged;
  }

  /** The session whose read fills this staging buffer. */
  public String session() {
    return staged.shard().session();
  }

  public boolean verifies() {
    return verify;
  }

  /** Bytes this work installs (or stages for casts) out of the staged shard. */
  public long installedBytes() {
    long n = 0;
    for (ViewCopy c : copies) {
      n += c.destinationBytes();
    }
    for (ByteRun r : runs) {
      n += r.nbytes();
    }
    return n;
  }

  /** Takes a fresh digest (publishers republish every step while their geometry stays put). */
  public void refreshDigest(String digest) {
    this.expected = digest;
  }

  /** The staging buffer the shard lands in whole. */
  public MemorySegment staging() {
    return staging;
  }

  /**
   * Verifies, then copies.
   *
   * @throws DigestMismatchException naming the source, shard offset and publisher, before any copy
   *     ran
   */
  public void run(DigestProvider digests) {
    if (verify) {
      requireDigest(digests.digest(staging));
    }
    replay();
  }

  /**
   * Checks the digest of the staged bytes (taken where they landed).
   *
   * @throws DigestMismatchException naming the source, shard offset and publisher
   */
  public void requireDigest(String actual) {
    if (!actual.equalsIgnoreCase(expected)) {
      Shard s = staged.shard();
      throw new DigestMismatchException(
          staged.source(), s.shardOffset(), s.session(), staged.region(), expected, actual);
    }
  }

  /** Copies the staged shard out of staging: only once it is verified, where it verifies. */
  public void replay() {
    for (ViewCopy c : copies) {
      c.run();
    }
    if (device == null) {
      for (ByteRun r : runs) {
        MemorySegment.copy(staging, r.from(), r.dst(), r.to(), r.nbytes());
      }
    } else if (!runs.isEmpty()) {
      device.copyAll(staging, runFrom, runDst, runTo, runBytes);
    }
  }

  @Override
  public String toString() {
    return "staged shard "
        + staged.shardIndex()
        + (staged.tile() < 0 ? "" : " " + staged.region())
        + " of '"
        + staged.source()
        + "' from "
        + session();
  }
}
