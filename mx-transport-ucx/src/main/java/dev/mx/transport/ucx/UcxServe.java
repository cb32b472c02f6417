package dev.mx.transport.ucx;

import dev.mx.transport.kit.RegionBook;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayDeque;
import java.util.Map;
import java.util.function.Supplier;
import org.openucx.jucx.ucp.UcpAmData;
import org.openucx.jucx.ucp.UcpConstants;
import org.openucx.jucx.ucp.UcpEndpoint;
import org.openucx.jucx.ucp.UcpRequest;
import org.openucx.jucx.ucp.UcpRequestParams;
import org.openucx.jucx.ucp.UcpWorker;
import org.openucx.jucx.ucs.UcsConstants;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads as requests the publisher answers with UCX active messages, instead of one-sided GETs.
 *
 * <p>Why (issue 14): where UCX has no hardware GET (TCP, and shared memory without CMA) it emulates
 * one inside the publisher's progress, with requests of its own. When the receiver's connection
 * drops while such replies are queued (a receiver that timed out, exited or was killed while the
 * publisher was stopped) UCX 1.13 aborts the publisher process: {@code ucp_request.inl "unexpected
 * error: Endpoint timeout"} from {@code ucp_request_try_send}, or {@code uct_tcp_ep} destroying a
 * pending queue that still holds them. A reply sent with {@code ucp_am_send_nbx} is an ordinary
 * request of ours: when the peer goes away it completes with an error, and the publisher carries
 * on. Large replies use UCX's rendezvous, which moves the bytes zero-copy where the transport can
 * (RDMA, CMA).
 *
 * <p>Wire format, little-endian. A request ({@link #READ}, sent with a reply endpoint) has a
 * {@value #REQUEST_BYTES}-byte header: token (8, names the batch), index (4: a descriptor, or
 * {@code -1 - r} to probe region {@code r}), reserved (4), slot (8), cookie (8), source address
 * (8), length (8). The publisher answers every request with one {@link #REPLY}: a {@value
 * #REPLY_BYTES}-byte header (token, index, status: 0 served, 1 the region is no longer registered)
 * and, for a served data request, the bytes. It serves only bytes inside a region it has registered
 * under that slot and cookie.
 */
final class UcxServe {
  private static final Logger LOG = LoggerFactory.getLogger(UcxServe.class);

  /** Active message ids; nothing else in mx uses UCX active messages. */
  static final int READ = 21;

  static final int REPLY = 22;
  static final int REQUEST_BYTES = 48;
  static final int REPLY_BYTES = 16;
  static final int SERVED = 0;
  static final int NOT_REGISTERED = 1;
  private static final ValueLayout.OfLong LONG =
      ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
  private static final ValueLayout.OfInt INT =
      ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

  /**
   * jucx 1.18 would otherwise pass a memory type UCX 1.13 rejects; every buffer here is host
   * memory.
   */
  static final UcpRequestParams HOST =
      new UcpRequestParams().setMemoryType(UcsConstants.MEMORY_TYPE.UCS_MEMORY_TYPE_HOST);

  private final String session;
  private final Supplier<RegionBook.Snapshot<UcxRegistration>> registrations;
  private final UcpWorker worker;

  /** Batches waiting for replies, by token. */
  private final Map<Long, UcxBatch> awaiting;

  /**
   * Replies UCX has not completed yet, with their headers, which must stay valid until then (UCX
   * 1.13 cannot copy an active message header). Sent without a callback, so that replies to a
   * receiver that went away fail quietly. Worker lock held.
   */
  private final ArrayDeque<InFlight> replies = new ArrayDeque<>();

  private record InFlight(UcpRequest request, MemorySegment header) {}

  /**
   * Serves the reads of endpoint {@code session} from its {@code registrations} and dispatches the
   * replies to its {@code awaiting} batches.
   */
  UcxServe(
      String session,
      Supplier<RegionBook.Snapshot<UcxRegistration>> registrations,
      UcpWorker worker,
      Map<Long, UcxBatch> awaiting) {
    this.session = session;
    this.registrations = registrations;
    this.worker = worker;
    this.awaiting = awaiting;
    worker.setAmRecvHandler(READ, this::serve, UcpConstants.UCP_AM_FLAG_WHOLE_MSG);
    worker.setAmRecvHandler(REPLY, this::onReply, UcpConstants.UCP_AM_FLAG_WHOLE_MSG);
  }

  /** Writes request {@code i} of {@code headers}. */
  static void writeRequest(
      MemorySegment headers,
      int i,
      long token,
      int index,
      int slot,
      long cookie,
      long src,
      long length) {
    long at = (long) i * REQUEST_BYTES;
    headers.set(LONG, at, token);
    headers.set(INT, at + 8, index);
    headers.set(INT, at + 12, 0);
    headers.set(LONG, at + 16, slot);
    headers.set(LONG, at + 24, cookie);
    headers.set(LONG, at + 32, src);
    headers.set(LONG, at + 40, length);
  }

  /**
   * Sends request {@code i} of {@code headers} to the peer. Worker lock held. No callback: its
   * reply completes it, and a peer that fails is reported by the endpoint's error handler (jucx
   * would log every failed request with a callback as an error). The headers stay reachable from
   * the batch until its endpoint is closed.
   */
  static void send(UcpEndpoint ep, MemorySegment headers, int i) {
    ep.sendAmNonBlocking(
        READ,
        headers.address() + (long) i * REQUEST_BYTES,
        REQUEST_BYTES,
        0,
        0,
        UcpConstants.UCP_AM_SEND_FLAG_REPLY,
        null,
        HOST);
  }

  // ---------------------------------------------------------------- publisher side

  /**
   * Answers one read request (in progress, worker lock held). Never throws: a bad request is
   * dropped.
   */
  private int serve(long headerAddress, long headerSize, UcpAmData data, UcpEndpoint replyEp) {
    try {
      if (headerSize < REQUEST_BYTES || replyEp == null) {
        LOG.debug(
            "ucx endpoint '{}': dropping a read request without a reply endpoint or header",
            session);
        return UcsConstants.STATUS.UCS_OK;
      }
      MemorySegment h = MemorySegment.ofAddress(headerAddress).reinterpret(REQUEST_BYTES);
      long token = h.get(LONG, 0);
      int index = h.get(INT, 8);
      long slot = h.get(LONG, 16);
      long cookie = h.get(LONG, 24);
      long src = h.get(LONG, 32);
      long length = h.get(LONG, 40);
      RegionBook.Snapshot<UcxRegistration> regions = registrations.get();
      int id = length <= 0 ? -1 : regions.table().find(src, length);
      UcxRegistration r = id < 0 ? null : regions.get(id);
      boolean live = r != null && r.slot == slot && r.cookie == cookie;
      MemorySegment reply = Arena.ofAuto().allocate(REPLY_BYTES, 8);
      reply.set(LONG, 0, token);
      reply.set(INT, 8, index);
      reply.set(INT, 12, live ? SERVED : NOT_REGISTERED);
      boolean withData = live && index >= 0;
      UcpRequest sent =
          replyEp.sendAmNonBlocking(
              REPLY,
              reply.address(),
              REPLY_BYTES,
              withData ? src : 0,
              withData ? length : 0,
              0,
              null,
              HOST);
      forgetCompletedReplies();
      if (sent != null && !sent.isCompleted()) {
        replies.addLast(new InFlight(sent, reply));
      }
    } catch (RuntimeException e) {
      LOG.debug("ucx endpoint '{}': answering a read request failed: {}", session, e.toString());
    }
    return UcsConstants.STATUS.UCS_OK;
  }

  /**
   * Drops the oldest completed replies (all completed ones once many are held). Worker lock held.
   */
  private void forgetCompletedReplies() {
    while (!replies.isEmpty() && replies.peekFirst().request().isCompleted()) {
      replies.pollFirst();
    }
    if (replies.size() > 4096) {
      replies.removeIf(r -> r.request().isCompleted());
    }
  }

  // ---------------------------------------------------------------- receiver side

  /**
   * A reply to one of our requests (in progress, worker lock held). Replies of finished batches are
   * dropped.
   */
  private int onReply(long headerAddress, long headerSize, UcpAmData data, UcpEndpoint ep) {
    if (headerSize < REPLY_BYTES) {
      return UcsConstants.STATUS.UCS_OK;
    }
    MemorySegment h = MemorySegment.ofAddress(headerAddress).reinterpret(REPLY_BYTES);
    UcxBatch b = awaiting.get(h.get(LONG, 0));
    int index = h.get(INT, 8);
    int status = h.get(INT, 12);
    if (b == null) {
      return UcsConstants.STATUS.UCS_OK; // late: the call already returned; UCX drops the data
    }
    if (index < 0) {
      UcxBatch.Flush probe = b.probe;
      int region = -1 - index;
      if (status != SERVED && (b.deadRegion < 0 || region < b.deadRegion)) {
        b.deadRegion = region;
      }
      probe.landed();
      return UcsConstants.STATUS.UCS_OK;
    }
    UcxBatch.Flush phase = b.data;
    if (phase == null || index >= b.len.length) {
      return UcsConstants.STATUS.UCS_OK;
    }
    if (status != SERVED) {
      phase.fail(
          "descriptor #"
              + index
              + " "
              + b.group.get(index)
              + ": peer '"
              + b.session()
              + "' no longer has its region registered");
      return UcsConstants.STATUS.UCS_OK;
    }
    long length = b.len[index];
    if (data == null || data.getLength() != length) {
      phase.fail(
          "descriptor #"
              + index
              + ": peer '"
              + b.session()
              + "' answered "
              + (data == null ? 0 : data.getLength())
              + " bytes for a read of "
              + length);
      return UcsConstants.STATUS.UCS_OK;
    }
    if (data.isDataValid()) {
      MemorySegment.copy(
          MemorySegment.ofAddress(data.getDataAddress()).reinterpret(length),
          0,
          MemorySegment.ofAddress(b.dst[index]).reinterpret(length),
          0,
          length);
      phase.landed();
    } else {
      // Rendezvous: UCX moves the bytes straight into the destination. Polled, not called back:
      // jucx would log
      // every receive a failing peer cancels as an error, on this process's stdout.
      UcpRequest receive =
          worker.recvAmDataNonBlocking(data.getDataHandle(), b.dst[index], length, null, HOST);
      b.receiving(phase, index, receive);
    }
    return UcsConstants.STATUS.UCS_OK;
  }
}
