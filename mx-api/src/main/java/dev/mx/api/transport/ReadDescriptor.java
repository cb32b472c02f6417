package dev.mx.api.transport;

/**
 * One one-sided read: {@code nbytes} from absolute address {@code srcAddr} in the memory of peer
 * {@code session} to absolute local address {@code dstAddr}.
 */
public record ReadDescriptor(String session, long srcAddr, long dstAddr, long nbytes) {

  public ReadDescriptor {
    if (session == null) {
      throw new IllegalArgumentException("read descriptor has no session");
    }
    if (nbytes < 0) {
      throw new IllegalArgumentException(
          "read descriptor from session '" + session + "' has negative nbytes " + nbytes);
    }
  }

  @Override
  public String toString() {
    return "ReadDescriptor[session "
        + session
        + ", src 0x"
        + Long.toHexString(srcAddr)
        + ", dst 0x"
        + Long.toHexString(dstAddr)
        + ", "
        + nbytes
        + " bytes]";
  }
}
