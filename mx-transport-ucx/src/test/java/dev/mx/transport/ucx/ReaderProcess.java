package dev.mx.transport.ucx;

import dev.mx.api.error.TransportTimeoutException;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A ucx receiver in its own JVM, for tests that stop or kill one mid-read: {@code ReaderProcess
 * PEER METADATA BASE LENGTH COPIES TIMEOUT_MS [KEY=VALUE]...} connects to publisher {@code PEER},
 * reads its region once and prints {@code READY}, then reads it {@code COPIES} times in one call
 * (many outstanding GETs) and prints {@code RESULT ok}, {@code RESULT timeout} or {@code RESULT
 * failed ...}. It then obeys its stdin: {@code close} closes its endpoint (worker and context) and
 * prints {@code CLOSED}; {@code exit} exits without closing anything; end of input closes and
 * exits.
 */
public final class ReaderProcess {
  /** Prefix of every line this process prints for its parent. */
  static final String PREFIX = "mx-reader: ";

  private ReaderProcess() {}

  public static void main(String[] args) throws Exception {
    String peer = args[0];
    byte[] metadata = Base64.getDecoder().decode(args[1]);
    long base = Long.parseLong(args[2]);
    long length = Long.parseLong(args[3]);
    int copies = Integer.parseInt(args[4]);
    Duration timeout = Duration.ofMillis(Long.parseLong(args[5]));
    Map<String, String> properties = new LinkedHashMap<>();
    for (int i = 6; i < args.length; i++) {
      int eq = args[i].indexOf('=');
      properties.put(args[i].substring(0, eq), args[i].substring(eq + 1));
    }
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    try (Arena arena = Arena.ofShared()) {
      Transport t =
          new UcxTransportProvider().create(new TransportConfig("reader", timeout, properties));
      MemorySegment dst = arena.allocate(length, 4096);
      t.register(dst);
      t.connect(peer, metadata);
      ReadDescriptor whole = new ReadDescriptor(peer, base, dst.address(), length);
      t.read(List.of(whole), Duration.ofSeconds(60));
      System.out.println(PREFIX + "READY");
      System.out.flush();
      String result;
      try {
        t.read(Collections.nCopies(copies, whole), timeout);
        result = "ok";
      } catch (TransportTimeoutException e) {
        result = "timeout";
      } catch (RuntimeException e) {
        result = "failed " + e;
      }
      System.out.println(PREFIX + "RESULT " + result);
      System.out.flush();
      for (String line; (line = in.readLine()) != null; ) {
        switch (line.trim()) {
          case "close" -> {
            t.close();
            System.out.println(PREFIX + "CLOSED");
            System.out.flush();
          }
          case "exit" -> Runtime.getRuntime().halt(0);
          default -> System.out.println(PREFIX + "unknown command '" + line + "'");
        }
      }
      t.close();
    }
  }
}
