package dev.mx.transport.shm;

import dev.mx.api.error.TransportException;
import dev.mx.api.error.TransportTimeoutException;
import dev.mx.api.transport.LandingFolds;
import dev.mx.api.transport.PendingRead;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.transport.kit.RegionDirectory;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.LongAdder;

/**
 * Reads from one peer, validated, as flat arrays (the copy loop touches nothing else); copies run
 * in the endpoint's {@code await} after every peer of the call was checked.
 */
final class ShmBatch implements PendingRead {
  final ShmPeer peer;
  final List<ReadDescriptor> group;
  final int[] region;

  /** The peer's mapped region per descriptor, or null where it is read by cross-memory attach. */
  final MemorySegment[] src;

  final long[] srcOff;
  final MemorySegment[] dst;
  final long[] dstOff;
  final long[] len;
  final boolean[] used;
  long bytes;

  ShmBatch(ShmPeer peer, List<ReadDescriptor> group) {
    int n = group.size();
    this.peer = peer;
    this.group = group;
    this.region = new int[n];
    this.src = new MemorySegment[n];
    this.srcOff = new long[n];
    this.dst = new MemorySegment[n];
    this.dstOff = new long[n];
    this.len = new long[n];
    this.used = new boolean[peer.mapped.length];
  }

  @Override
  public String session() {
    return peer.session;
  }

  @Override
  public int descriptorCount() {
    return region.length;
  }

  @Override
  public long bytes() {
    return bytes;
  }

  /** While copying, look at the clock once per this many bytes or descriptors. */
  private static final long CHECK_EVERY_BYTES = 64L << 20;

  private static final int CHECK_EVERY_DESCRIPTORS = 4096;

  /**
   * Runs {@code step}; a peer's mappings closed meanwhile (it was reconnected, or this endpoint
   * closed) fail it.
   */
  void guarded(Runnable step) {
    try {
      step.run();
    } catch (IllegalStateException closedMeanwhile) {
      throw new TransportException(
          peer.session,
          "shm transport: peer '"
              + peer.session
              + "' was disconnected or this endpoint closed during the read",
          closedMeanwhile);
    }
  }

  /**
   * Throws, naming the peer and {@code consequence}, when the peer died or deregistered a region
   * the batch reads.
   */
  void check(String consequence) {
    if (peer.isClosed()) {
      throw new TransportException(
          peer.session,
          "shm transport: peer '"
              + peer.session
              + "' was reconnected with new metadata while this batch was prepared; "
              + consequence);
    }
    for (int r = 0; r < used.length; r++) {
      ShmPeerMetadata.Region reg = peer.meta.regions().get(r);
      if (used[r] && !RegionDirectory.isLive(peer.directorySlots, reg.slot(), reg.cookie())) {
        int first = 0;
        while (region[first] != r) {
          first++;
        }
        if (!peer.readsAfterExit && !peer.alive()) {
          break; // report the death, below
        }
        throw new TransportException(
            peer.session,
            "shm transport: descriptor #"
                + first
                + " "
                + group.get(first)
                + " reads region "
                + describe(reg.base(), reg.length())
                + " which peer '"
                + peer.session
                + "' has deregistered since it published its metadata; "
                + consequence);
      }
    }
    if (!peer.alive()) {
      if (peer.readsAfterExit && readsOnlyMapped()) {
        return; // as it left them: its mappings here outlive it (its files go at the next failure)
      }
      peer.reclaimIfDead();
      throw new TransportException(
          peer.session,
          "shm transport: peer '"
              + peer.session
              + "' (pid "
              + peer.meta.host().pid()
              + ") has exited; "
              + consequence);
    }
  }

  /** Whether every descriptor of {@code b} reads a mapped region (none by cross-memory attach). */
  private boolean readsOnlyMapped() {
    for (MemorySegment m : src) {
      if (m == null) {
        return false;
      }
    }
    return true;
  }

  /**
   * Copies every descriptor (mapped regions with plain copies, registered memory by cross-memory
   * attach), counting the bytes of each path into {@code mappedBytes} and {@code attachedBytes}.
   */
  void copy(long deadline, Duration timeout, LongAdder mappedBytes, LongAdder attachedBytes) {
    int n = region.length;
    long sinceCheck = 0;
    long mapped = 0;
    long attached = 0;
    try (Arena scratch = Arena.ofConfined()) {
      Attach attach = null;
      // Mapped reads are CPU copies: a receiver's fold digests them in the same pass.
      LandingFolds folds = LandingFolds.current();
      for (int i = 0; i < n; i++) {
        if (src[i] != null) {
          folds.copy(group.get(i), src[i], srcOff[i], dst[i], dstOff[i]);
          mapped += len[i];
        } else {
          attached += len[i];
          if (attach == null) {
            attach = new Attach(peer, scratch);
          }
          attach.add(group.get(i));
        }
        sinceCheck += len[i];
        if (sinceCheck >= CHECK_EVERY_BYTES || (i + 1) % CHECK_EVERY_DESCRIPTORS == 0) {
          sinceCheck = 0;
          if (attach != null) {
            attach.flush();
          }
          if (System.nanoTime() - deadline > 0) {
            throw new TransportTimeoutException(
                peer.session,
                "shm transport: reads from peer '"
                    + peer.session
                    + "' did not complete within "
                    + timeout
                    + " ("
                    + (i + 1)
                    + " of "
                    + n
                    + " descriptors done)");
          }
        }
      }
      if (attach != null) {
        attach.flush();
      }
      mappedBytes.add(mapped);
      attachedBytes.add(attached);
    } catch (TransportException e) {
      if (!(e instanceof TransportTimeoutException)) {
        peer.reclaimOnceGone();
      }
      throw e;
    }
  }

  /** Descriptors read with process_vm_readv, up to {@link ShmNative#IOV_MAX} per call. */
  private static final class Attach {
    final ShmPeer peer;
    final MemorySegment local;
    final MemorySegment remote;
    final MemorySegment state;
    int count;
    long want;
    long done;

    Attach(ShmPeer peer, Arena arena) {
      this.peer = peer;
      this.local = arena.allocate(16L * ShmNative.IOV_MAX, 8);
      this.remote = arena.allocate(16L * ShmNative.IOV_MAX, 8);
      this.state = ShmNative.callState(arena);
    }

    void add(ReadDescriptor d) {
      local.setAtIndex(ValueLayout.JAVA_LONG, 2L * count, d.dstAddr());
      local.setAtIndex(ValueLayout.JAVA_LONG, 2L * count + 1, d.nbytes());
      remote.setAtIndex(ValueLayout.JAVA_LONG, 2L * count, d.srcAddr());
      remote.setAtIndex(ValueLayout.JAVA_LONG, 2L * count + 1, d.nbytes());
      count++;
      want += d.nbytes();
      if (count == ShmNative.IOV_MAX) {
        flush();
      }
    }

    void flush() {
      if (count == 0) {
        return;
      }
      long got;
      try {
        got = ShmNative.processVmReadv((int) peer.meta.host().pid(), local, remote, count, state);
      } catch (ShmNative.NativeError e) {
        throw peer.attachFailure(e, done);
      }
      if (got != want) {
        throw new TransportException(
            peer.session,
            "shm transport: peer '"
                + peer.session
                + "' memory could be read"
                + " only in part ("
                + got
                + " of "
                + want
                + " bytes): the peer unmapped it or exited");
      }
      done += got;
      count = 0;
      want = 0;
    }
  }

  private static String describe(long base, long length) {
    return "0x" + Long.toHexString(base) + "+" + length;
  }
}
