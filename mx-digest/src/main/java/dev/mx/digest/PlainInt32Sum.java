package dev.mx.digest;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

/**
 * The baseline the digest's speed is judged against (target: digest throughput / this &ge; 1.0): a
 * plain loop summing the same little-endian int32 words into a long, with nothing else to do. Used
 * by {@code mx bench digest} and the JMH benchmark; not part of the digest.
 */
public final class PlainInt32Sum {

  private PlainInt32Sum() {}

  /** The wrapping sum of the whole int32 words of {@code bytes}, on the calling thread. */
  public static long sum(MemorySegment bytes) {
    return sum(bytes, 0, bytes.byteSize() / Integer.BYTES);
  }

  private static long sum(MemorySegment bytes, long fromWord, long toWord) {
    long total = 0;
    for (long at = fromWord * Integer.BYTES, end = toWord * Integer.BYTES;
        at < end;
        at += Integer.BYTES) {
      total += bytes.get(RowKernel.WORD, at);
    }
    return total;
  }

  /** The same sum split into {@code tasks} contiguous word ranges run on {@code executor}. */
  public static long sum(MemorySegment bytes, Executor executor, int tasks) {
    long words = bytes.byteSize() / Integer.BYTES;
    long per = Math.ceilDiv(words, Math.max(tasks, 1));
    List<CompletableFuture<Long>> parts = new ArrayList<>();
    for (long from = per; from < words; from += per) {
      long start = from;
      parts.add(
          CompletableFuture.supplyAsync(
              () -> sum(bytes, start, Math.min(words, start + per)), executor));
    }
    long total = sum(bytes, 0, Math.min(words, per));
    for (CompletableFuture<Long> part : parts) {
      total += part.join();
    }
    return total;
  }
}
