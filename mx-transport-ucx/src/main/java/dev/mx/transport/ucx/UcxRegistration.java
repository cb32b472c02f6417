package dev.mx.transport.ucx;

import dev.mx.api.transport.MemoryKind;
import dev.mx.transport.kit.BookedRegistration;
import dev.mx.transport.kit.RegionBook;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.function.Consumer;
import org.openucx.jucx.ucp.UcpMemory;

/**
 * A registered region: its UCX mapping, the rkey peers read it with, and its directory slot;
 * deregistered (directory slot cleared first, then UCX's mapping) on close, by the release the
 * endpoint hands it.
 */
final class UcxRegistration extends BookedRegistration {
  final UcpMemory memory;
  final byte[] rkey;
  final int slot;
  final long cookie;

  /** For memory UCX allocated: the arena its segment is bound to. */
  final Arena arena;

  private final Consumer<UcxRegistration> release;

  UcxRegistration(
      RegionBook<UcxRegistration> book,
      int id,
      MemorySegment segment,
      UcpMemory memory,
      byte[] rkey,
      int slot,
      long cookie,
      Arena arena,
      Object registry,
      Consumer<UcxRegistration> release) {
    super(book, id, segment, MemoryKind.HOST, registry);
    this.memory = memory;
    this.rkey = rkey;
    this.slot = slot;
    this.cookie = cookie;
    this.arena = arena;
    this.release = release;
  }

  @Override
  protected void release() {
    release.accept(this);
  }
}
