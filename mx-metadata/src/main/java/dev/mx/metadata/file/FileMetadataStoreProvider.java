package dev.mx.metadata.file;

import dev.mx.api.annotation.Stable;
import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.MetadataStoreProvider;
import java.net.URI;
import java.nio.file.Path;

/**
 * Opens {@code file:DIR} stores ({@code file:/abs/dir}, {@code file:///abs/dir} or {@code
 * file:relative/dir}): one host, many processes, no server. Always available.
 */
@Stable
public final class FileMetadataStoreProvider extends MetadataStoreProvider {

  @Override
  public String scheme() {
    return "file";
  }

  @Override
  public boolean isAvailable() {
    return true;
  }

  @Override
  public MetadataStore open(URI uri) {
    String dir;
    if (uri.isOpaque()) {
      dir = uri.getSchemeSpecificPart();
    } else {
      if (uri.getAuthority() != null && !uri.getAuthority().isEmpty()) {
        throw new IllegalArgumentException(
            "metadata store "
                + uri
                + ": a file: store is local to one host;"
                + " write file:/path or file:///path, not a host name ('"
                + uri.getAuthority()
                + "')");
      }
      dir = uri.getPath();
    }
    if (dir == null || dir.isEmpty()) {
      throw new IllegalArgumentException(
          "metadata store " + uri + " names no directory (write file:DIR)");
    }
    return new FileMetadataStore(Path.of(dir));
  }
}
