package dev.mx.metadata.file;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;

/**
 * Creates the {@code file:} store's folders and files readable and writable by their owner only,
 * whatever the umask: a version document or shard table another local user could rewrite would let
 * them choose what every receiver installs. The permissions are passed at creation, so there is no
 * window in which a file exists with wider ones (a umask can only remove bits from them).
 */
final class OwnerOnly {
  private static final FileAttribute<Set<PosixFilePermission>> DIR =
      PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------"));
  private static final FileAttribute<Set<PosixFilePermission>> FILE =
      PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------"));
  private static final Set<PosixFilePermission> WRITABLE_BY_OTHERS =
      Set.of(PosixFilePermission.GROUP_WRITE, PosixFilePermission.OTHERS_WRITE);

  private OwnerOnly() {}

  /** Like {@link Files#createDirectories}, each folder it creates owner-only. */
  static void createDirectories(Path dir) throws IOException {
    if (Files.isDirectory(dir)) {
      return;
    }
    Path parent = dir.toAbsolutePath().getParent();
    if (parent != null) {
      createDirectories(parent);
    }
    try {
      Files.createDirectory(dir, DIR);
    } catch (FileAlreadyExistsException raced) {
      if (!Files.isDirectory(dir)) {
        throw raced;
      }
    }
  }

  /** Opens {@code file} for writing with {@code options}; a file it creates is owner-only. */
  static FileChannel open(Path file, OpenOption... options) throws IOException {
    return FileChannel.open(file, Set.of(options), FILE);
  }

  /**
   * Refuses a store folder that a user other than its owner can write (group or others write bit)
   * or that another user owns: either could replace what receivers install.
   *
   * @throws IOException naming the folder, its mode and the fix
   */
  static void requireOwnedAndPrivate(Path dir) throws IOException {
    Set<PosixFilePermission> mode = Files.getPosixFilePermissions(dir, LinkOption.NOFOLLOW_LINKS);
    if (mode.stream().anyMatch(WRITABLE_BY_OTHERS::contains)) {
      throw new IOException(
          dir
              + " is writable by other users (mode "
              + PosixFilePermissions.toString(mode)
              + "), who could rewrite the versions and tables receivers install; run chmod go-w "
              + dir
              + " or choose a folder of your own");
    }
    Path self = Path.of("/proc/self");
    if (!Files.exists(self)) {
      return; // not Linux: the mode check above is what can be checked
    }
    int owner = (Integer) Files.getAttribute(dir, "unix:uid", LinkOption.NOFOLLOW_LINKS);
    int me = (Integer) Files.getAttribute(self, "unix:uid", LinkOption.NOFOLLOW_LINKS);
    if (owner != me) {
      throw new IOException(
          dir
              + " belongs to user '"
              + Files.getOwner(dir, LinkOption.NOFOLLOW_LINKS).getName()
              + "' (uid "
              + owner
              + "), not to the user who opens it (uid "
              + me
              + "); a store must be the opener's own");
    }
  }
}
