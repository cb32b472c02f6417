package dev.mx.refit.verify;

import dev.mx.api.annotation.Internal;
import dev.mx.api.digest.DigestProvider;
import dev.mx.api.digest.TileDigests;
import dev.mx.api.error.DigestMismatchException;
import dev.mx.api.error.UnverifiableShardException;
import dev.mx.api.memory.MemoryOps;
import dev.mx.api.plan.Shard;
import dev.mx.api.plan.SourceInfo;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.refit.VerifyMode;
import dev.mx.refit.reslice.Reslicer;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiFunction;

/**
 * Recomputes the digest of every published shard a refit received whole and compares it with the
 * publisher's digest, before anything is installed.
 *
 * <p>A shard is "held whole" when the reads of the refit cover every byte of the shard's buffer:
 * the reads say where each source byte landed (a full-pull staging buffer, convert staging at the
 * wire dtype, or a receive buffer), so the shard's contiguous bytes can be reassembled exactly as
 * the publisher digested them. One read covering the whole shard (a full pull of a dim-0 partition,
 * or an exact copy of a whole shard into a contiguous destination) is digested in place; otherwise
 * the pieces are gathered into a scratch buffer first. This generalizes ModelExpress' "directly
 * recoverable copy" to any plan whose reads happen to cover whole shards, e.g. a coarser inference
 * topology assembling whole trainer shards.
 *
 * <p>In the default mode ({@code all}) a shard read only in part and published with tile digests is
 * checked tile by tile: every tile the reads touch must be held whole (the shard staging pulled the
 * partly held boundary tiles whole into staging, where they are checked before their bytes are
 * copied out).
 *
 * <p>The plan of checks is built once per set of receive buffers; {@link #verify} runs it every
 * refit.
 */
@Internal
public final class ShardVerifier implements AutoCloseable {

  /**
   * Bytes {@code [shardByte, shardByte + bytes.byteSize())} of the shard sit in {@code bytes},
   * brought by read {@code origin}.
   */
  record Piece(long shardByte, MemorySegment bytes, ReadDescriptor origin) {}

  /**
   * One shard, or one tile of it ({@code tile >= 0}), to check: its pieces cover the region's
   * {@code size} bytes in order (piece offsets relative to the region).
   */
  record Check(
      String source, Shard shard, int tile, long size, String expected, List<Piece> pieces) {
    boolean inPlace() {
      return pieces.size() == 1 && pieces.get(0).shardByte() == 0;
    }

    String region() {
      if (tile < 0) {
        return null;
      }
      return shard.usableTiles().describe(tile, shard.byteSize());
    }
  }

  /**
   * Takes the expected digests from a fresh discovery: publishers republish new digests every step
   * while their geometry stays put. Shards are matched by source, publisher, offset and shape.
   *
   * @throws UnverifiableShardException when a checked shard is no longer published or lost its
   *     digest
   */
  public void refreshDigests(Map<String, SourceInfo> fresh) {
    List<Check> updated = new ArrayList<>(checks.size());
    for (Check c : checks) {
      Shard match = null;
      SourceInfo info = fresh.get(c.source());
      if (info != null) {
        for (Shard s : info.shards()) {
          if (s.session().equals(c.shard().session())
              && s.shape().equals(c.shard().shape())
              && java.util.Arrays.equals(s.shardOffset(), c.shard().shardOffset())) {
            match = s;
            break;
          }
        }
      }
      String digest = match == null ? null : digestOf(match, c.tile());
      if (digest == null) {
        throw new UnverifiableShardException(
            c.source(),
            c.shard().shardOffset(),
            c.shard().session(),
            match == null
                ? "the publisher no longer publishes this shard"
                : "the publisher stopped publishing a "
                    + (c.tile() < 0 ? "digest" : "tile digest for " + c.region())
                    + " of it");
      }
      updated.add(
          new Check(
              c.source(),
              c.shard().withDigests(match.digest(), match.tiles()),
              c.tile(),
              c.size(),
              digest,
              c.pieces()));
    }
    checks = List.copyOf(updated);
  }

  /** The result of one verification. */
  public record Outcome(int verified, int unverifiable) {}

  private volatile List<Check> checks;
  private final int unverifiable;
  private final long unverifiableBytes;
  private final Arena scratchArena;

  /** Null for host memory; else the device whose memory the pieces and the scratch buffers are. */
  private final MemoryOps device;

  private final List<AutoCloseable> deviceScratch = new ArrayList<>();

  /** Host gather buffers not yet allocated, and their size. */
  private int scratchLeft;

  private long scratchBytes;
  private final BlockingQueue<MemorySegment> scratch;
  private final java.util.concurrent.atomic.AtomicBoolean closed =
      new java.util.concurrent.atomic.AtomicBoolean();

  @SuppressWarnings("MustBeClosedChecker") // the scratch arena is a field, closed by close()
  private ShardVerifier(
      List<Check> checks,
      int unverifiable,
      long unverifiableBytes,
      long maxGather,
      int parallelism,
      MemoryOps device) {
    this.device = device;
    this.checks = List.copyOf(checks);
    this.unverifiable = unverifiable;
    this.unverifiableBytes = unverifiableBytes;
    int gatherChecks = (int) checks.stream().filter(c -> !c.inPlace()).count();
    int buffers = Math.min(Math.max(1, parallelism), gatherChecks);
    if (buffers > 0 && maxGather > 0 && device != null) {
      scratchArena = null;
      scratch = new ArrayBlockingQueue<>(buffers);
      for (int i = 0; i < buffers; i++) {
        dev.mx.api.transport.MemoryRegistration m = device.allocate(maxGather);
        deviceScratch.add(m);
        scratch.add(m.segment());
      }
    } else if (buffers > 0 && maxGather > 0) {
      // Allocated on first use: checks digested piece by piece never gather.
      scratchArena = Arena.ofShared();
      scratch = new ArrayBlockingQueue<>(buffers);
      scratchLeft = buffers;
      scratchBytes = maxGather;
    } else {
      scratchArena = null;
      scratch = null;
    }
  }

  /**
   * Plans the checks for one set of reads.
   *
   * @param mode {@code STRICT} fails here (before any byte moves) for a shard without digest or not
   *     held whole; {@code WHOLE_SHARDS} counts those as unverifiable
   * @param sources the discovered sources
   * @param usedSources names of the sources the receiver reads; their shards are the ones
   *     considered
   * @param reads every read of the refit (exact, full pull, convert)
   * @param destination maps a read's destination (absolute address, bytes) to the memory it lands
   *     in
   * @param parallelism workers {@link #verify} will use (sizes the gather scratch pool)
   * @throws UnverifiableShardException in strict mode, naming the first shard that cannot be
   *     verified
   */
  public static ShardVerifier plan(
      VerifyMode mode,
      Map<String, SourceInfo> sources,
      Collection<String> usedSources,
      List<ReadDescriptor> reads,
      BiFunction<Long, Long, MemorySegment> destination,
      int parallelism) {
    return plan(mode, sources, usedSources, reads, destination, parallelism, null);
  }

  /**
   * As {@link #plan(VerifyMode, Map, Collection, List, BiFunction, int)} for reads that land in
   * device memory when {@code device} is not null: pieces are gathered into device scratch by
   * {@code device}'s copies (the digest the caller passes to {@link #verify} must then read device
   * memory).
   */
  public static ShardVerifier plan(
      VerifyMode mode,
      Map<String, SourceInfo> sources,
      Collection<String> usedSources,
      List<ReadDescriptor> reads,
      BiFunction<Long, Long, MemorySegment> destination,
      int parallelism,
      MemoryOps device) {
    if (mode == VerifyMode.OFF) {
      return new ShardVerifier(List.of(), 0, 0, 0, 0, device);
    }
    Map<String, List<ReadDescriptor>> bySession = new HashMap<>();
    for (ReadDescriptor d : reads) {
      if (d.nbytes() > 0) {
        bySession.computeIfAbsent(d.session(), s -> new ArrayList<>()).add(d);
      }
    }
    Map<String, long[]> starts = new HashMap<>();
    for (Map.Entry<String, List<ReadDescriptor>> e : bySession.entrySet()) {
      e.getValue().sort(Comparator.comparingLong(ReadDescriptor::srcAddr));
      starts.put(e.getKey(), e.getValue().stream().mapToLong(ReadDescriptor::srcAddr).toArray());
    }
    List<Check> checks = new ArrayList<>();
    int unverifiable = 0;
    long unverifiableBytes = 0;
    long maxGather = 0;
    for (String name : usedSources) {
      SourceInfo info = sources.get(name);
      if (info == null) {
        continue;
      }
      for (Shard shard : info.shards()) {
        List<Piece> pieces =
            covering(
                shard, bySession.get(shard.session()), starts.get(shard.session()), destination);
        boolean touched = pieces != null && !pieces.isEmpty();
        boolean whole =
            pieces != null && (shard.byteSize() == 0 || coversWhole(pieces, shard.byteSize()));
        if (mode == VerifyMode.STRICT) {
          if (!whole) {
            throw new UnverifiableShardException(
                name,
                shard.shardOffset(),
                shard.session(),
                "strict staged verification cannot reconstruct the complete published shard: the plan reads "
                    + (touched ? "only part of it" : "none of it")
                    + " (full-pull the source to verify it)");
          }
          if (shard.digest() == null) {
            throw new UnverifiableShardException(
                name,
                shard.shardOffset(),
                shard.session(),
                "the publisher did not publish a verification digest");
          }
        } else if (!touched) {
          continue; // not read by this receiver at all: nothing to verify, nothing at risk
        } else if (!whole && mode == VerifyMode.ALL && shard.usableTiles() != null) {
          maxGather = Math.max(maxGather, planTiles(name, shard, pieces, checks));
          continue;
        } else if (!whole || shard.digest() == null) {
          if (mode == VerifyMode.ALL) {
            throw new UnverifiableShardException(
                name,
                shard.shardOffset(),
                shard.session(),
                (shard.digest() == null
                        ? "the publisher did not publish a verification digest for it"
                        : "the plan reads only part of it and it was not staged whole")
                    + "; the default verification ("
                    + "mx.receiver.verify=all) verifies every installed byte. Publish digests, or opt out explicitly with"
                    + " --verify whole-shards or --verify off (mx.receiver.verify=whole-shards|off)");
          }
          unverifiable++;
          for (Piece p : pieces) {
            unverifiableBytes += p.bytes().byteSize();
          }
          continue;
        }
        Check c =
            new Check(
                name, shard, -1, shard.byteSize(), shard.digest(), trim(pieces, shard.byteSize()));
        if (!c.inPlace()) {
          maxGather = Math.max(maxGather, shard.byteSize());
        }
        checks.add(c);
      }
    }
    return new ShardVerifier(
        checks, unverifiable, unverifiableBytes, maxGather, parallelism, device);
  }

  /**
   * Plans one check per tile of a partly read shard that the pieces touch: each must be held whole
   * (the shard staging pulled the partly held boundary tiles into staging buffers of their own).
   *
   * @return the largest gather a tile check needs
   * @throws UnverifiableShardException naming the shard and tile when a touched tile is held only
   *     in part
   */
  private static long planTiles(String name, Shard shard, List<Piece> pieces, List<Check> checks) {
    TileDigests tiles = shard.usableTiles();
    long size = shard.byteSize();
    java.util.TreeMap<Integer, List<Piece>> byTile = new java.util.TreeMap<>();
    for (Piece p : pieces) {
      long ps = p.shardByte();
      tiles.forEachPart(
          ps,
          Math.min(size, ps + p.bytes().byteSize()),
          (k, regionByte, shardByte, n) ->
              byTile
                  .computeIfAbsent(k, x -> new ArrayList<>())
                  .add(new Piece(regionByte, p.bytes().asSlice(shardByte - ps, n), p.origin())));
    }
    long maxGather = 0;
    for (Map.Entry<Integer, List<Piece>> e : byTile.entrySet()) {
      int k = e.getKey();
      long n = tiles.regionBytes(k, size);
      List<Piece> tp = e.getValue();
      tp.sort(Comparator.comparingLong(Piece::shardByte));
      if (!coversWhole(tp, n)) {
        throw new UnverifiableShardException(
            name,
            shard.shardOffset(),
            shard.session(),
            "the plan reads only part of its "
                + tiles.describe(k, size)
                + " and that"
                + " tile was not staged whole; the default verification (mx.receiver.verify=all) verifies every installed"
                + " byte. Opt out explicitly with --verify whole-shards or --verify off");
      }
      Check c = new Check(name, shard, k, n, tiles.digest(k), trim(tp, n));
      if (!c.inPlace()) {
        maxGather = Math.max(maxGather, n);
      }
      checks.add(c);
    }
    return maxGather;
  }

  private static String digestOf(Shard s, int tile) {
    if (tile < 0) {
      return s.digest();
    }
    TileDigests t = s.usableTiles();
    return t == null || tile >= t.digests().size() ? null : t.digest(tile);
  }

  /**
   * The pieces of {@code shard} among the session's reads, sorted by shard byte; null when none.
   */
  private static List<Piece> covering(
      Shard shard,
      List<ReadDescriptor> reads,
      long[] starts,
      BiFunction<Long, Long, MemorySegment> destination) {
    if (reads == null) {
      return null;
    }
    long lo = shard.addr();
    long hi = lo + shard.byteSize();
    int i = Arrays.binarySearch(starts, lo);
    if (i < 0) {
      i = -i - 1;
    } else {
      while (i > 0 && starts[i - 1] == lo) {
        i--;
      }
    }
    List<Piece> pieces = new ArrayList<>();
    for (; i < starts.length && starts[i] < hi; i++) {
      ReadDescriptor d = reads.get(i);
      long n = Math.min(d.nbytes(), hi - d.srcAddr());
      pieces.add(new Piece(d.srcAddr() - lo, destination.apply(d.dstAddr(), n), d));
    }
    return pieces;
  }

  private static boolean coversWhole(List<Piece> sortedPieces, long size) {
    long until = 0;
    for (Piece p : sortedPieces) {
      if (p.shardByte() > until) {
        return false;
      }
      until = Math.max(until, p.shardByte() + p.bytes().byteSize());
    }
    return until >= size;
  }

  /** Keeps only the pieces that extend coverage, so each byte is gathered once. */
  private static List<Piece> trim(List<Piece> sortedPieces, long size) {
    List<Piece> kept = new ArrayList<>();
    long until = 0;
    for (Piece p : sortedPieces) {
      long end = p.shardByte() + p.bytes().byteSize();
      if (end <= until) {
        continue;
      }
      long skip = until - p.shardByte();
      kept.add(skip > 0 ? new Piece(until, p.bytes().asSlice(skip), p.origin()) : p);
      until = end;
      if (until >= size) {
        break;
      }
    }
    return kept;
  }

  /** Shards that will be checked each refit. */
  public int checkCount() {
    return checks.size();
  }

  /** Shards read but not verifiable (partly read, or published without digest). */
  public int unverifiableCount() {
    return unverifiable;
  }

  /** Bytes read out of unverifiable shards: installed without verification. */
  public long unverifiableBytes() {
    return unverifiableBytes;
  }

  /**
   * The digest {@code fresh} publishes now for the shard at {@code shard}'s session, offset and
   * shape, or null when that shard or its digest is gone.
   */
  public static String freshDigest(Map<String, SourceInfo> fresh, String source, Shard shard) {
    return freshDigest(fresh, source, shard, -1);
  }

  /**
   * As {@link #freshDigest(Map, String, Shard)}, for the shard's tile {@code tile} when it is not
   * negative.
   */
  public static String freshDigest(
      Map<String, SourceInfo> fresh, String source, Shard shard, int tile) {
    SourceInfo info = fresh.get(source);
    if (info != null) {
      for (Shard s : info.shards()) {
        if (s.session().equals(shard.session())
            && s.shape().equals(shard.shape())
            && java.util.Arrays.equals(s.shardOffset(), shard.shardOffset())) {
          return digestOf(s, tile);
        }
      }
    }
    return null;
  }

  /**
   * Digests every planned shard and compares.
   *
   * @throws DigestMismatchException for the first mismatch (others attached as suppressed)
   */
  public Outcome verify(DigestProvider digests, ExecutorService executor, int parallelism) {
    if (checks.isEmpty()) {
      return new Outcome(0, unverifiable);
    }
    AtomicInteger verified = new AtomicInteger();
    List<Runnable> tasks = new ArrayList<>(checks.size());
    for (Check c : checks) {
      tasks.add(counted(c, digests, verified));
    }
    if (executor == null || parallelism <= 1 || tasks.size() == 1) {
      for (Runnable t : tasks) {
        t.run();
      }
    } else {
      Reslicer.runAll(tasks, executor);
    }
    return new Outcome(verified.get(), unverifiable);
  }

  /**
   * The checks as work for a pipelined wire, each digest in the same pass as the read that brings
   * its bytes: where the provider combines pieces ({@link DigestProvider#parts}, host memory), each
   * piece goes into {@code plan} under the read that lands it, folded into its check's accumulator
   * while the transport copies it when it moves bytes with the CPU, else from the landed memory
   * while it is still in cache; whoever adds a check's last byte compares, against the digest
   * published at that refit ({@link #refreshDigests}), so the plan serves every refit of these
   * reads. Checks of the sources in {@code kept} (not read by a delta step) are left out.
   *
   * @return the checks left out of the plan (the provider cannot combine their pieces), for {@link
   *     #wholeWork}
   */
  public int[] planLanding(DigestProvider digests, java.util.Set<String> kept, LandingPlan plan) {
    List<Check> now = checks;
    int[] whole = new int[now.size()];
    int wholeCount = 0;
    for (int i = 0; i < now.size(); i++) {
      Check c = now.get(i);
      if (kept.contains(c.source())) {
        continue; // a delta step did not read it: its held bytes were verified when they landed
      }
      // Device memory: pieces digested where they landed when its ops can (one pass, no gather).
      if (c.size() == 0 || digests.parts(c.size()).isEmpty()) {
        whole[wholeCount++] = i;
        continue;
      }
      int index = i;
      LandingDigest digest =
          plan.region(c.size(), actual -> compare(checks.get(index), actual), null);
      for (Piece p : c.pieces()) {
        long n = Math.min(p.bytes().byteSize(), c.size() - p.shardByte());
        MemorySegment bytes = p.bytes().asSlice(0, n);
        ReadDescriptor read = p.origin();
        plan.add(read, bytes.address() - read.dstAddr(), p.shardByte(), bytes, digest);
      }
    }
    return Arrays.copyOf(whole, wholeCount);
  }

  /**
   * The checks {@link #planLanding} left out, each digested whole once all of its peer's reads
   * landed, keyed by that peer's session; each counts into {@code verified} on success.
   */
  public Map<String, List<Runnable>> wholeWork(
      DigestProvider digests, AtomicInteger verified, int[] which) {
    Map<String, List<Runnable>> bySession = new java.util.LinkedHashMap<>();
    List<Check> now = checks;
    for (int i : which) {
      Check c = now.get(i);
      bySession
          .computeIfAbsent(c.shard().session(), k -> new ArrayList<>())
          .add(counted(c, digests, verified));
    }
    return bySession;
  }

  /** Checks {@code c} whole and counts it into {@code verified} when it matched. */
  private Runnable counted(Check c, DigestProvider digests, AtomicInteger verified) {
    return () -> {
      check(c, digests);
      verified.incrementAndGet();
    };
  }

  private void check(Check c, DigestProvider digests) {
    String actual;
    if (c.inPlace()) {
      actual = digests.digest(c.pieces().get(0).bytes().asSlice(0, c.size()));
    } else {
      MemorySegment buf = takeScratch();
      try {
        MemorySegment whole = buf.asSlice(0, c.size());
        for (Piece p : c.pieces()) {
          long n = Math.min(p.bytes().byteSize(), whole.byteSize() - p.shardByte());
          if (device == null) {
            MemorySegment.copy(p.bytes(), 0, whole, p.shardByte(), n);
          } else {
            device.copy(p.bytes(), 0, whole, p.shardByte(), n);
          }
        }
        actual = digests.digest(whole);
      } finally {
        scratch.add(buf);
      }
    }
    compare(c, actual);
  }

  private static void compare(Check c, String actual) {
    if (!actual.equalsIgnoreCase(c.expected())) {
      throw new DigestMismatchException(
          c.source(),
          c.shard().shardOffset(),
          c.shard().session(),
          c.region(),
          c.expected(),
          actual);
    }
  }

  private MemorySegment takeScratch() {
    MemorySegment free = scratch.poll();
    if (free != null) {
      return free;
    }
    synchronized (this) {
      if (scratchLeft > 0) {
        scratchLeft--;
        return scratchArena.allocate(scratchBytes, 64);
      }
    }
    try {
      return scratch.take();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while waiting for a verification buffer", e);
    }
  }

  @Override
  public void close() {
    if (closed.compareAndSet(false, true)) {
      if (scratchArena != null) {
        scratchArena.close();
      }
      dev.mx.api.util.Closeables.closeAll(deviceScratch.reversed());
    }
  }
}
