package dev.mx.transport.testsuite.toy;

import dev.mx.api.error.TransportException;
import dev.mx.api.error.TransportTimeoutException;
import dev.mx.api.transport.MemoryRegistration;
import dev.mx.api.transport.PendingRead;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.api.transport.TransportProvider;
import dev.mx.api.util.Closeables;
import dev.mx.transport.kit.AbstractTransport;
import dev.mx.transport.kit.BookedRegistration;
import dev.mx.transport.kit.LocalCopy;
import dev.mx.transport.kit.PeerMetadataCodec;
import dev.mx.transport.kit.PeerTable;
import dev.mx.transport.kit.RegionBook;
import dev.mx.transport.kit.RegionTable;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.WritableByteChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * A loopback TCP transport, written from the backend kit as CONTRIBUTING.md ("Writing a transport")
 * walks through it: a {@link RegionBook} of {@link BookedRegistration}s, metadata read with a
 * {@link PeerMetadataCodec}, and the read steps of {@link AbstractTransport}. Each endpoint listens
 * on a loopback port; a receiver sends a batch's ranges, the publisher checks all of them against
 * its live registrations and streams the bytes, or refuses the whole batch. A toy: a connection per
 * batch, every byte through the socket, no security.
 */
public final class ToyTcpTransport extends AbstractTransport {
  static final String NAME = "toy-tcp";
  private static final int MAGIC = 0x50435854; // "TXCP" read little-endian

  private final RegionBook<Registration> book = new RegionBook<>(NAME);
  private final ServerSocket server;
  private final PeerTable<Peer> peers = new PeerTable<>(NAME);

  ToyTcpTransport(TransportConfig config) {
    super(config);
    try {
      server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    } catch (IOException e) {
      throw new TransportException(null, NAME + " transport: cannot listen on loopback: " + e, e);
    }
    Thread.ofPlatform().daemon().name("toy-tcp-accept-" + config.session()).start(this::accept);
  }

  @Override
  public String name() {
    return NAME;
  }

  /** Finds the toy by name, so the suite's publisher process can start one. */
  public static final class Provider extends TransportProvider {
    @Override
    public String name() {
      return NAME;
    }

    @Override
    public boolean isAvailable() {
      return true;
    }

    @Override
    public Transport create(TransportConfig config) {
      return new ToyTcpTransport(config);
    }
  }

  // ---- registration: the kit's book and registration base do all of it

  private static final class Registration extends BookedRegistration {
    Registration(RegionBook<Registration> book, int id, MemorySegment segment) {
      super(book, id, segment);
    }
  }

  @Override
  protected MemoryRegistration doRegister(MemorySegment region) {
    return book.add(region, id -> new Registration(book, id, region));
  }

  // ---- metadata: the port, and every registered region

  record Metadata(int port, List<Region> regions) {
    record Region(long base, long length) implements PeerMetadataCodec.PublishedRegion {}

    byte[] encode() {
      ByteBuffer b = ByteBuffer.allocate(12 + 16 * regions.size());
      b.putInt(MAGIC).putInt(port).putInt(regions.size());
      regions.forEach(r -> b.putLong(r.base()).putLong(r.length()));
      return b.array();
    }

    static Metadata decode(String session, byte[] blob) {
      ByteBuffer b = ByteBuffer.wrap(blob);
      if (b.getInt() != MAGIC) {
        throw new IllegalArgumentException("not toy-tcp metadata");
      }
      int port = b.getInt();
      List<Region> regions = new ArrayList<>();
      for (int i = b.getInt(); i > 0; i--) {
        regions.add(new Region(b.getLong(), b.getLong()));
      }
      return new Metadata(port, regions);
    }

    static final PeerMetadataCodec<Metadata> CODEC =
        PeerMetadataCodec.of(Metadata::decode, Metadata::regions);
  }

  @Override
  public byte[] localMetadata() {
    ensureOpen();
    List<Metadata.Region> regions = new ArrayList<>();
    for (Registration r : book.all()) {
      regions.add(new Metadata.Region(r.address(), r.length()));
    }
    return new Metadata(server.getLocalPort(), regions).encode();
  }

  // ---- serving: check every range of a batch against the live registrations, then stream

  private void accept() {
    while (!server.isClosed()) {
      try {
        Socket s = server.accept();
        Thread.ofPlatform().daemon().name("toy-tcp-serve-" + localSession()).start(() -> serve(s));
      } catch (IOException closed) {
        return;
      }
    }
  }

  /** Answers one batch: its ranges, all checked against the live registrations, or a refusal. */
  private void serve(Socket s) {
    try (s;
        DataInputStream in = new DataInputStream(new BufferedInputStream(s.getInputStream()));
        DataOutputStream out =
            new DataOutputStream(new BufferedOutputStream(s.getOutputStream()))) {
      int n = in.readInt();
      long[] addr = new long[n];
      long[] len = new long[n];
      for (int i = 0; i < n; i++) {
        addr[i] = in.readLong();
        len[i] = in.readLong();
      }
      RegionBook.Snapshot<Registration> live = book.snapshot();
      int[] ids = new int[n];
      int refused = -1;
      for (int i = 0; i < n && refused < 0; i++) {
        ids[i] = live.table().find(addr[i], len[i]);
        refused = ids[i] < 0 ? i : -1;
      }
      out.writeInt(refused);
      WritableByteChannel channel = Channels.newChannel(out);
      for (int i = 0; refused < 0 && i < n; i++) {
        MemorySegment seg = live.get(ids[i]).segment();
        channel.write(seg.asSlice(addr[i] - seg.address(), len[i]).asByteBuffer());
      }
    } catch (IOException | RuntimeException peerGone) {
      // The receiver went away (or sent garbage): nothing to answer.
    }
  }

  // ---- peers

  /** A connected peer: where it listens, and the regions it published. */
  private record Peer(String session, int port, RegionTable regions) {}

  @Override
  public void connect(String session, byte[] metadata) {
    PeerMetadataCodec.Decoded<Metadata> peer =
        decodePeer(session, peerBlob(session, metadata), Metadata.CODEC);
    peers.put(session, new Peer(session, peer.metadata().port(), peer.regions()));
  }

  @Override
  public boolean isConnected(String session) {
    return session.equals(localSession()) || peers.contains(session);
  }

  // ---- reads: validate against both sides' tables, then move everything in await

  private record Batch(Peer peer, List<ReadDescriptor> group, MemorySegment[] dst, long bytes)
      implements PendingRead {
    @Override
    public String session() {
      return peer.session();
    }

    @Override
    public int descriptorCount() {
      return group.size();
    }
  }

  @Override
  protected PendingRead prepare(String session, List<ReadDescriptor> group) {
    RegionBook.Snapshot<Registration> to = book.snapshot();
    if (session.equals(localSession())) {
      return prepareLocalCopy(session, group, to.table(), id -> to.get(id).segment());
    }
    Peer peer = peers.get(session);
    MemorySegment[] dst = new MemorySegment[group.size()];
    long total = 0;
    for (int i = 0; i < dst.length; i++) {
      ReadDescriptor d = group.get(i);
      if (peer.regions().find(d.srcAddr(), d.nbytes()) < 0) {
        throw sourceOutsideRegions(i, d, peer.regions());
      }
      int t = to.table().find(d.dstAddr(), d.nbytes());
      if (t < 0) {
        throw destinationOutsideRegions(i, d, to.table());
      }
      dst[i] = to.get(t).segment();
      total += d.nbytes();
    }
    return new Batch(peer, group, dst, total);
  }

  @Override
  protected void await(List<PendingRead> started, Duration timeout) {
    for (PendingRead p : started) {
      if (p instanceof LocalCopy local) {
        local.copy();
      } else {
        fetch((Batch) p, timeout);
      }
    }
  }

  /** One connection per batch: the ranges out, then a refusal or every byte back. */
  private static void fetch(Batch b, Duration timeout) {
    Peer peer = b.peer();
    try (Socket s = new Socket(InetAddress.getLoopbackAddress(), peer.port());
        DataInputStream in = new DataInputStream(new BufferedInputStream(s.getInputStream()));
        DataOutputStream out =
            new DataOutputStream(new BufferedOutputStream(s.getOutputStream()))) {
      s.setSoTimeout((int) Math.min(Integer.MAX_VALUE, timeout.toMillis()));
      out.writeInt(b.group().size());
      for (ReadDescriptor d : b.group()) {
        out.writeLong(d.srcAddr());
        out.writeLong(d.nbytes());
      }
      out.flush();
      int refused = in.readInt();
      if (refused >= 0) {
        String why = "no longer serves descriptor #%d %s (deregistered); nothing was read";
        throw failure(peer, why.formatted(refused, b.group().get(refused)), null);
      }
      ReadableByteChannel channel = Channels.newChannel(in);
      for (int i = 0; i < b.dst().length; i++) {
        ReadDescriptor d = b.group().get(i);
        MemorySegment dst = b.dst()[i];
        ByteBuffer to = dst.asSlice(d.dstAddr() - dst.address(), d.nbytes()).asByteBuffer();
        while (to.hasRemaining()) {
          if (channel.read(to) < 0) {
            throw new EOFException("the peer closed the connection mid-reply");
          }
        }
      }
    } catch (SocketTimeoutException e) {
      throw new TransportTimeoutException(
          peer.session(), NAME + " transport: peer '" + peer.session() + "' timed out");
    } catch (IOException e) {
      throw failure(peer, e.toString(), e);
    }
  }

  private static TransportException failure(Peer peer, String why, Throwable cause) {
    String session = peer.session();
    return new TransportException(
        session, NAME + " transport: peer '" + session + "' " + why, cause);
  }

  @Override
  protected void doClose() {
    peers.closeAll(); // plain records: nothing to close
    book.clear();
    Closeables.closeAll(server);
  }
}
