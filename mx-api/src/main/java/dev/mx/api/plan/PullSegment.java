package dev.mx.api.plan;

/**
 * One contiguous byte read: {@code nbytes} from absolute {@code srcAddr} in {@code session} to byte
 * {@code dstByte} of the destination named {@code paramName} (a parameter, a full-pull staging
 * buffer or a convert staging buffer, depending on the list the segment sits in).
 */
public record PullSegment(
    String session, long srcAddr, String paramName, long dstByte, long nbytes) {

  public PullSegment {
    if (nbytes < 0 || dstByte < 0) {
      throw new IllegalArgumentException(
          "segment into '"
              + paramName
              + "' from session '"
              + session
              + "' has negative dst_byte "
              + dstByte
              + " or nbytes "
              + nbytes);
    }
  }
}
