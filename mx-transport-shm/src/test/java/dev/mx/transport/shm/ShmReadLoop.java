package dev.mx.transport.shm;

import dev.mx.api.transport.ReadDescriptor;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;

/**
 * A receiver process for fault tests: connects to the shm peer whose metadata (base64) is in the
 * file {@code args[0]} under session {@code args[1]}, then reads all of its regions again and
 * again, printing {@code read N} after each, until it is killed.
 */
public final class ShmReadLoop {
  private ShmReadLoop() {}

  public static void main(String[] args) throws Exception {
    byte[] meta = Base64.getDecoder().decode(Files.readString(Path.of(args[0])).trim());
    String peer = args[1];
    ShmPeerMetadata m = ShmPeerMetadata.decode(meta);
    long total = 0;
    for (ShmPeerMetadata.Region r : m.regions()) {
      total += r.length();
    }
    try (Arena arena = Arena.ofShared();
        Transport t = new ShmTransportProvider().create(TransportConfig.of("doomed-receiver"))) {
      MemorySegment dst = arena.allocate(total, 4096);
      t.register(dst);
      t.connect(peer, meta);
      List<ReadDescriptor> all = new ArrayList<>();
      long at = 0;
      for (ShmPeerMetadata.Region r : m.regions()) {
        all.add(new ReadDescriptor(peer, r.base(), dst.address() + at, r.length()));
        at += r.length();
      }
      for (long n = 0; ; n++) {
        t.read(all);
        System.out.println("read " + n);
      }
    }
  }
}
