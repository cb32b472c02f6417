package dev.mx.cli;

import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.util.Locale;

/**
 * Why a file operation failed, in words: the JDK's path-only messages ("/x/y") say where but not
 * why.
 */
public final class IoErrors {
  private IoErrors() {}

  /**
   * The reason, e.g. "is a file", "read-only file system", "permission denied", preceded by the
   * file it concerns when that is not {@code subject} (the path the caller names itself).
   */
  public static String reason(IOException e, Object subject) {
    String file = e instanceof FileSystemException f ? f.getFile() : null;
    String prefix = file == null || file.equals(String.valueOf(subject)) ? "" : file + ": ";
    if (e instanceof FileAlreadyExistsException) {
      return prefix + "exists and is a file";
    }
    if (e instanceof NoSuchFileException) {
      return prefix + "no such file or directory";
    }
    if (e instanceof AccessDeniedException) {
      return prefix + "permission denied";
    }
    if (e instanceof NotDirectoryException) {
      return prefix + "not a directory";
    }
    if (e instanceof DirectoryNotEmptyException) {
      return prefix + "directory not empty";
    }
    if (e instanceof FileSystemException f && f.getReason() != null) {
      return prefix + f.getReason().toLowerCase(Locale.ROOT);
    }
    return e.getMessage() == null ? e.toString() : e.getMessage();
  }
}
