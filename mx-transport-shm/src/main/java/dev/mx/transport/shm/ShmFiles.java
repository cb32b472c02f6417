package dev.mx.transport.shm;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.ThreadLocalRandom;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Names of the shm transport's files and the reclaiming of leftovers. Every file is named {@code
 * mx-shm-<pid namespace>-<pid>-<start time>-<endpoint nonce>-<what>}, so any later start on the
 * host can tell, without any registry, that its creator is dead (no process with that pid and start
 * time in that namespace) and delete it. Files of live processes, of other pid namespaces and of
 * other users are left alone.
 */
final class ShmFiles {
  private static final Logger LOG = LoggerFactory.getLogger(ShmFiles.class);

  /** The prefix every shm transport file carries. */
  static final String PREFIX = "mx-shm-";

  /** The first word of an endpoint's directory file ("MXSHDIR1"), then its nonce, pid, capacity. */
  static final long DIRECTORY_MAGIC = 0x3152_4944_4853_584dL;

  /** The directory file's header, before its {@link dev.mx.transport.kit.RegionDirectory}. */
  static final long HEADER_BYTES = 64;

  /** Config property: a group that may read an endpoint's files ({@code ShmTransport.GROUP}). */
  static final String GROUP = "shm.group";

  /**
   * Files of live endpoints of this JVM, deleted by a shutdown hook if the JVM exits before they
   * are closed.
   */
  private static final java.util.Set<Path> LIVE =
      java.util.concurrent.ConcurrentHashMap.newKeySet();

  static {
    Thread hook =
        new Thread(
            () -> {
              for (Path p : LIVE) {
                try {
                  Files.deleteIfExists(
                      p); // unlinking leaves any mapping valid: safe while threads still read
                } catch (IOException | RuntimeException ignored) {
                  // Best effort: the next start reclaims what is left.
                }
              }
            },
            "mx-shm-cleanup");
    Runtime.getRuntime().addShutdownHook(hook);
  }

  private ShmFiles() {}

  /**
   * Records a file this JVM created, so an exit (SIGTERM, System.exit) without close still deletes
   * it.
   */
  static void created(Path path) {
    LIVE.add(path);
  }

  /** Forgets a file this JVM deleted. */
  static void deleted(Path path) {
    LIVE.remove(path);
  }

  /** The prefix of an endpoint's files: its creator and a random nonce. */
  static String endpointPrefix(ShmHost self, long nonce) {
    return PREFIX
        + self.pidNamespaceId()
        + "-"
        + self.pid()
        + "-"
        + self.startTime()
        + "-"
        + Long.toHexString(nonce)
        + "-";
  }

  /** A fresh random non-zero nonce. */
  static long newNonce() {
    return ThreadLocalRandom.current().nextLong() | 1L;
  }

  /**
   * Deletes every file in {@code dir} whose creator (named in the file name) is dead, in this pid
   * namespace. Returns how many it deleted. Never throws.
   */
  static int reclaim(Path dir, ShmHost self) {
    int deleted = 0;
    try (DirectoryStream<Path> files = Files.newDirectoryStream(dir, PREFIX + "*")) {
      for (Path f : files) {
        if (isDeadLeftover(f.getFileName().toString(), self)) {
          try {
            if (Files.deleteIfExists(f)) {
              deleted++;
            }
          } catch (IOException | RuntimeException e) {
            LOG.debug("cannot reclaim {}: {}", f, e.toString());
          }
        }
      }
    } catch (IOException | RuntimeException e) {
      LOG.debug("cannot scan {} for leftovers: {}", dir, e.toString());
    }
    if (deleted > 0) {
      LOG.info("reclaimed {} shared-memory file(s) of dead processes in {}", deleted, dir);
    }
    return deleted;
  }

  /** Whether {@code name} is an shm transport file of a dead process of this pid namespace. */
  static boolean isDeadLeftover(String name, ShmHost self) {
    if (!name.startsWith(PREFIX)) {
      return false;
    }
    String[] parts = name.substring(PREFIX.length()).split("-");
    if (parts.length < 5 || !parts[0].equals(self.pidNamespaceId())) {
      return false;
    }
    try {
      long pid = Long.parseLong(parts[1]);
      long start = Long.parseLong(parts[2]);
      return !ShmHost.alive(pid, start);
    } catch (NumberFormatException e) {
      return false;
    }
  }
}
