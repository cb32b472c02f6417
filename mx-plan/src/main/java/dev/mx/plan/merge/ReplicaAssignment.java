package dev.mx.plan.merge;

import dev.mx.api.Shape;
import dev.mx.api.error.MxException;
import dev.mx.api.error.ReplicaMismatchException;
import dev.mx.api.plan.Shard;
import dev.mx.api.plan.SourceInfo;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Predicate;

/**
 * Spreads one receiver's reads over the trainer ranks that hold the same box of a tensor (an owner
 * and its data- or expert-parallel replicas), so that the bytes each trainer rank serves stay
 * balanced across the job without any coordination between receivers.
 *
 * <p>The assignment is a pure function of the discovered offers, the receiver's rank and the set of
 * live publishers: every receiver computes it alike. Per receiver it is a greedy longest-first
 * balance: boxes with a single live offer are charged to their holder first, then the boxes with a
 * choice, largest first (ties by tensor name and offset), each go to the live offer that this
 * receiver has charged least so far, ties rotated by the receiver's rank so that receivers start on
 * different replicas. Each receiver thus splits its own bytes evenly over each replica set, and the
 * sum over receivers is even too.
 *
 * <p>The rotation is the XOR of the rank's base-2<sup>k</sup> digits, {@code 2^k >= n} offers
 * ({@link #rotation}), not the rank itself: the receivers that read one box are typically the same
 * TP rank of every inference group, ranks {@code j + s·m} for a power-of-two {@code s}, and {@code
 * (j + s·m) mod n} is one value for all of them whenever {@code n} divides {@code s} (every TP 8
 * receiver of a slice held by 4 replicas would read the first); the digit fold spreads them evenly.
 *
 * <p>Replicas are checked against their owner: a digest that differs from the owner's fails with a
 * {@link ReplicaMismatchException} naming both publishers. A replica listed without tile digests is
 * read with the owner's, so a receiver can verify part of it. A box whose every holder is dead
 * fails naming it and them.
 */
public final class ReplicaAssignment {
  private ReplicaAssignment() {}

  /** One box of a tensor and every live publisher that offers it, by session. */
  private record Box(String source, int position, Shard tiled, List<Shard> offers, long bytes) {
    long[] offset() {
      return offers.getFirst().shardOffset();
    }
  }

  /**
   * The sources receiver {@code receiverRank} reads: every box of {@code owners} read from one live
   * offer among the owner and its {@code replicas}.
   *
   * @param owners the merged sources, one shard (the owner's, the first offer) per box
   * @param replicas per tensor, the further offers of boxes the owners already hold (same offset
   *     and shape, another publisher); tensors without replicas may be absent
   * @param live whether a publisher (by session) can be read; dead replicas are skipped and their
   *     share goes to the live ones
   * @throws ReplicaMismatchException when a replica's digest differs from its owner's
   * @throws MxException when no live publisher holds a box, naming the tensor, box and publishers
   */
  public static Map<String, SourceInfo> assign(
      Map<String, SourceInfo> owners,
      Map<String, List<Shard>> replicas,
      int receiverRank,
      Predicate<String> live) {
    List<Box> boxes = boxes(owners, replicas, live);
    Map<String, Long> load = new HashMap<>();
    Map<String, Map<Integer, Shard>> chosen = new HashMap<>();
    List<Box> choices = new ArrayList<>();
    for (Box b : boxes) {
      if (b.offers.size() == 1) {
        choose(b, b.offers.getFirst(), load, chosen);
      } else {
        choices.add(b);
      }
    }
    choices.sort(
        Comparator.comparingLong(Box::bytes)
            .reversed()
            .thenComparing(Box::source)
            .thenComparing(Box::offset, Arrays::compare));
    for (Box b : choices) {
      int n = b.offers.size();
      int start = rotation(receiverRank, n);
      Shard best = null;
      long bestLoad = Long.MAX_VALUE;
      for (int i = 0; i < n; i++) {
        Shard s = b.offers.get(Math.floorMod(start + i, n));
        long l = load.getOrDefault(s.session(), 0L);
        if (l < bestLoad) {
          best = s;
          bestLoad = l;
        }
      }
      choose(b, best, load, chosen);
    }
    Map<String, SourceInfo> out = new LinkedHashMap<>();
    owners.forEach(
        (name, info) -> {
          Map<Integer, Shard> picks = chosen.getOrDefault(name, Map.of());
          List<Shard> shards = new ArrayList<>(info.shards().size());
          for (int i = 0; i < info.shards().size(); i++) {
            shards.add(picks.getOrDefault(i, info.shards().get(i)));
          }
          out.put(
              name,
              new SourceInfo(
                  info.globalShape(), info.dtype(), info.elsize(), shards, info.partial()));
        });
    return out;
  }

  /**
   * Where receiver {@code rank} starts among {@code n} offers: the XOR of its base-{@code 2^k}
   * digits ({@code 2^k} the least power of two {@code >= n}), modulo {@code n}. For {@code n} a
   * power of two and ranks {@code j + s·m} ({@code s} a power of two, {@code m} over a whole block
   * of {@code n} or more) every start occurs equally often; ranks below {@code n} start at
   * themselves, as before.
   */
  static int rotation(int rank, int n) {
    int bits = 32 - Integer.numberOfLeadingZeros(Math.max(n - 1, 0));
    if (bits == 0) {
      return 0;
    }
    int digit = (1 << bits) - 1;
    int fold = 0;
    for (int x = rank; x != 0; x >>>= bits) {
      fold ^= x & digit;
    }
    return fold % n;
  }

  /** Every publisher in {@code replicas} and {@code owners} is live. */
  public static Map<String, SourceInfo> assign(
      Map<String, SourceInfo> owners, Map<String, List<Shard>> replicas, int receiverRank) {
    return assign(owners, replicas, receiverRank, session -> true);
  }

  private static void choose(
      Box b, Shard s, Map<String, Long> load, Map<String, Map<Integer, Shard>> chosen) {
    load.merge(s.session(), b.bytes, Long::sum);
    chosen.computeIfAbsent(b.source, k -> new HashMap<>()).put(b.position, withOwnersTiles(b, s));
  }

  /**
   * A replica as its publisher lists it carries its whole-shard digest but no tile digests (they
   * would multiply the tables by the replica count): equal digests mean equal bytes, so it is
   * verified tile by tile against the owner's.
   */
  private static Shard withOwnersTiles(Box b, Shard s) {
    Shard tiled = b.tiled;
    if (s.tiles() != null
        || tiled.tiles() == null
        || s.digest() == null
        || !s.digest().equals(tiled.digest())) {
      return s;
    }
    return new Shard(
        s.shardOffset(),
        s.shape(),
        s.session(),
        s.addr(),
        s.elsize(),
        s.digest(),
        tiled.tiles(),
        s.changedStep());
  }

  /** The boxes in tensor-name order, each with its live offers. */
  private static List<Box> boxes(
      Map<String, SourceInfo> owners, Map<String, List<Shard>> replicas, Predicate<String> live) {
    List<Box> out = new ArrayList<>();
    for (Map.Entry<String, SourceInfo> e : new TreeMap<>(owners).entrySet()) {
      String name = e.getKey();
      SourceInfo info = e.getValue();
      List<Shard> extra = replicas.getOrDefault(name, List.of());
      for (int i = 0; i < info.shards().size(); i++) {
        Shard owner = info.shards().get(i);
        List<Shard> all = new ArrayList<>();
        all.add(owner);
        for (Shard r : extra) {
          if (sameBox(owner, r)) {
            requireSameDigest(name, owner, r);
            all.add(r);
          }
        }
        // By session, not table order: receivers that listed the tables differently agree.
        all.sort(Comparator.comparing(Shard::session));
        List<Shard> alive = all.stream().filter(s -> live.test(s.session())).toList();
        if (alive.isEmpty()) {
          throw new MxException(
              "source '"
                  + name
                  + "' at offset "
                  + Arrays.toString(owner.shardOffset())
                  + ": no live publisher holds it (all of "
                  + all.stream().map(Shard::session).toList()
                  + " are dead)");
        }
        long bytes = owner.shape().numel() * owner.elsize();
        // The offer whose tile digests the others are read with (the owner's, as a rule).
        Shard tiled =
            owner.tiles() != null
                ? owner
                : all.stream().filter(s -> s.tiles() != null).findFirst().orElse(owner);
        out.add(new Box(name, i, tiled, alive, bytes));
      }
    }
    return out;
  }

  private static boolean sameBox(Shard a, Shard b) {
    Shape sa = a.shape();
    return sa.equals(b.shape()) && Arrays.equals(a.shardOffset(), b.shardOffset());
  }

  private static void requireSameDigest(String name, Shard owner, Shard replica) {
    if (owner.digest() != null
        && replica.digest() != null
        && !owner.digest().equals(replica.digest())) {
      throw new ReplicaMismatchException(
          name,
          owner.shardOffset(),
          owner.session(),
          owner.digest(),
          replica.session(),
          replica.digest());
    }
  }
}
