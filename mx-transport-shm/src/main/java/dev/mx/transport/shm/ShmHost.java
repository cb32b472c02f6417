package dev.mx.transport.shm;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Who and where this process is, as the shm transport decides "same host" and "still alive": the
 * kernel's boot id and host name (two hosts never share a boot id; two containers on one kernel do,
 * so the host name and the pid namespace must match too), and each process's start time, so that a
 * reused pid never passes for the process that published.
 */
record ShmHost(
    String bootId, String hostname, String pidNamespace, long pid, long startTime, int uid) {

  /** This process. */
  static ShmHost current() throws IOException {
    long pid = ProcessHandle.current().pid();
    long start = startTime(pid);
    if (start < 0) {
      throw new IOException("cannot read /proc/" + pid + "/stat");
    }
    return new ShmHost(
        read("/proc/sys/kernel/random/boot_id"),
        read("/proc/sys/kernel/hostname"),
        Files.readSymbolicLink(Path.of("/proc/self/ns/pid")).toString(),
        pid,
        start,
        (Integer) Files.getAttribute(Path.of("/proc/self"), "unix:uid"));
  }

  private static String read(String file) throws IOException {
    return Files.readString(Path.of(file), StandardCharsets.US_ASCII).trim();
  }

  /**
   * The start time (clock ticks after boot, field 22 of {@code /proc/PID/stat}) of process {@code
   * pid}, or -1 when there is no such process.
   */
  static long startTime(long pid) {
    String stat;
    try {
      stat = Files.readString(Path.of("/proc/" + pid + "/stat"), StandardCharsets.US_ASCII);
    } catch (IOException | RuntimeException e) {
      return -1;
    }
    // The command name (field 2) is in parentheses and may hold spaces: count fields after the last
    // ')'.
    int close = stat.lastIndexOf(')');
    if (close < 0) {
      return -1;
    }
    String[] rest = stat.substring(close + 2).split(" ");
    // rest[0] is field 3 (state), so field 22 is rest[19].
    if (rest.length < 20) {
      return -1;
    }
    try {
      if (rest[0].equals("Z") || rest[0].equals("X")) {
        return -1; // a zombie holds no memory any more
      }
      return Long.parseLong(rest[19]);
    } catch (NumberFormatException e) {
      return -1;
    }
  }

  /**
   * Whether the process {@code pid} that started at {@code startTime} still runs (in this pid
   * namespace).
   */
  static boolean alive(long pid, long startTime) {
    return startTime(pid) == startTime;
  }

  /** The inode number in {@code pid:[4026531836]}, for file names. */
  String pidNamespaceId() {
    return pidNamespace.replaceAll("[^0-9]", "");
  }
}
