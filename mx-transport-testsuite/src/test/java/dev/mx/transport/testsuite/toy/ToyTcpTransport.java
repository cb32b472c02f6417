package dev.mx.transport.testsuite.toy;

import dev.mx.api.error.TransportException;
import dev.mx.api.error.TransportTimeoutException;
import dev.mx.api.transport.AbstractTransport;
import dev.mx.api.transport.BookedRegistration;
import dev.mx.api.transport.LocalCopy;
import dev.mx.api.transport.MemoryRegistration;
import dev.mx.api.transport.PeerMetadataCodec;
import dev.mx.api.transport.PendingRead;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.api.transport.RegionBook;
import dev.mx.api.transport.RegionTable;
import dev.mx.api.transport.TransportConfig;
import dev.mx.api.util.Closeables;
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
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.WritableByteChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A loopback TCP transport, written from the backend kit as CONTRIBUTING.md ("Writing a transport")
 * walks through it: a {@link RegionBook} of {@link BookedRegistration}s, metadata read with a
 * {@link PeerMetadataCodec}, and the read steps of {@link AbstractTransport}. Each endpoint listens
 * on a loopback port; a receiver sends a batch's ranges, the publisher checks all of them against
 * its live registrations and streams the bytes, or refuses the whole batch. A toy: one connection
 * per peer, a copy through the socket per byte, no security.
 */
public final class ToyTcpTransport extends AbstractTransport {
  static final String NAME = "toy-tcp";
  private static final int MAGIC = 0x50435854; // "TXCP" read little-endian

  private final RegionBook<Registration> book = new RegionBook<>(NAME);
  private final ServerSocket server;
  private final Map<String, Peer> peers = new ConcurrentHashMap<>();
  private final Set<Socket> serving = ConcurrentHashMap.newKeySet();

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
      try {
        if (b.getInt() != MAGIC) {
          throw new IllegalArgumentException("not toy-tcp metadata");
        }
        int port = b.getInt();
        List<Region> regions = new ArrayList<>();
        for (int i = b.getInt(); i > 0; i--) {
          regions.add(new Region(b.getLong(), b.getLong()));
        }
        return new Metadata(port, regions);
      } catch (BufferUnderflowException e) {
        throw new IllegalArgumentException("truncated toy-tcp metadata", e);
      }
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
        serving.add(s);
        Thread.ofPlatform().daemon().name("toy-tcp-serve-" + localSession()).start(() -> serve(s));
      } catch (IOException closed) {
        return;
      }
    }
  }

  private void serve(Socket s) {
    try (s;
        DataInputStream in = new DataInputStream(new BufferedInputStream(s.getInputStream()));
        DataOutputStream out =
            new DataOutputStream(new BufferedOutputStream(s.getOutputStream()))) {
      WritableByteChannel channel = Channels.newChannel(out);
      while (true) {
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
        for (int i = 0; refused < 0 && i < n; i++) {
          MemorySegment seg = live.get(ids[i]).segment();
          channel.write(seg.asSlice(addr[i] - seg.address(), len[i]).asByteBuffer());
        }
        out.flush();
      }
    } catch (IOException | RuntimeException peerGone) {
      // The receiver closed its connection (or sent garbage): stop serving it.
    } finally {
      serving.remove(s);
    }
  }

  // ---- peers

  /** One connection per peer; a batch holds it for its request and reply. */
  private record Peer(
      String session, RegionTable regions, Socket socket, DataInputStream in, DataOutputStream out)
      implements AutoCloseable {
    static Peer open(String session, RegionTable regions, int port) throws IOException {
      Socket s = new Socket(InetAddress.getLoopbackAddress(), port);
      return new Peer(
          session,
          regions,
          s,
          new DataInputStream(new BufferedInputStream(s.getInputStream())),
          new DataOutputStream(new BufferedOutputStream(s.getOutputStream())));
    }

    @Override
    public void close() throws IOException {
      socket.close();
    }
  }

  @Override
  public void connect(String session, byte[] metadata) {
    PeerMetadataCodec.Decoded<Metadata> peer =
        decodePeer(session, peerBlob(session, metadata), Metadata.CODEC);
    try {
      Closeables.closeAll(
          peers.put(session, Peer.open(session, peer.regions(), peer.metadata().port())));
    } catch (IOException e) {
      throw new TransportException(session, NAME + " transport: peer '" + session + "': " + e, e);
    }
  }

  @Override
  public boolean isConnected(String session) {
    return session.equals(localSession()) || peers.containsKey(session);
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
    if (peer == null) {
      throw unknownPeer(session);
    }
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
  protected void start(PendingRead prepared) {
    // Nothing moves before await: a call's batches are all validated first.
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

  private static void fetch(Batch b, Duration timeout) {
    Peer peer = b.peer();
    synchronized (peer) {
      try {
        peer.socket().setSoTimeout((int) Math.min(Integer.MAX_VALUE, timeout.toMillis()));
        peer.out().writeInt(b.group().size());
        for (ReadDescriptor d : b.group()) {
          peer.out().writeLong(d.srcAddr());
          peer.out().writeLong(d.nbytes());
        }
        peer.out().flush();
        int refused = peer.in().readInt();
        if (refused >= 0) {
          throw new TransportException(
              peer.session(),
              NAME
                  + " transport: peer '"
                  + peer.session()
                  + "' no longer serves descriptor #"
                  + refused
                  + " "
                  + b.group().get(refused)
                  + " (deregistered); nothing in this batch was read");
        }
        ReadableByteChannel channel = Channels.newChannel(peer.in());
        for (int i = 0; i < b.dst().length; i++) {
          ReadDescriptor d = b.group().get(i);
          ByteBuffer to =
              b.dst()[i].asSlice(d.dstAddr() - b.dst()[i].address(), d.nbytes()).asByteBuffer();
          while (to.hasRemaining()) {
            if (channel.read(to) < 0) {
              throw new EOFException("the peer closed the connection mid-reply");
            }
          }
        }
      } catch (SocketTimeoutException e) {
        Closeables.closeAll(peer); // the stream is mid-reply: unusable from now on
        throw new TransportTimeoutException(
            peer.session(),
            NAME + " transport: " + peer.session() + " did not answer within " + timeout);
      } catch (IOException e) {
        throw new TransportException(
            peer.session(), NAME + " transport: peer '" + peer.session() + "': " + e, e);
      }
    }
  }

  @Override
  protected void doClose() {
    List<AutoCloseable> all = new ArrayList<>(List.of(server));
    all.addAll(peers.values());
    all.addAll(serving);
    peers.clear();
    book.clear();
    Closeables.closeAll(all);
  }
}
