package dev.mx.cli;

import dev.mx.api.error.MxException;
import dev.mx.digest.FileDigest;
import dev.mx.digest.ShardDigest;
import dev.mx.digest.safetensors.SafetensorsFile;
import dev.mx.digest.safetensors.SafetensorsIndex;
import dev.mx.digest.safetensors.SafetensorsTensor;
import java.io.IOException;
import java.io.PrintWriter;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.channels.ReadableByteChannel;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code mx digest FILE...}: the shard digest of each file's raw bytes, printed like {@code
 * sha256sum} (ARCHITECTURE §5.2); with {@code --safetensors}, one line per tensor in header order.
 * A regular file is mapped under a read lease ({@link FileDigest}): another process that truncates
 * or writes it meanwhile waits, and the digest stops with an error naming the file instead of the
 * JVM dying of SIGBUS; without a lease it is read in chunks. {@code -} is standard input; procfs
 * files are streamed to their end; FIFOs and devices are refused (pipe them into {@code -}). A name
 * holding a newline or backslash is printed escaped, with a leading backslash, as {@code sha256sum}
 * does. A file that cannot be digested is reported on stderr and the others are still digested; the
 * exit code is then 1.
 */
@Command(
    name = "digest",
    mixinStandardHelpOptions = true,
    description = {
      "Print the ModelExpress shard digest of each FILE's bytes, like sha256sum.",
      "Each line reads:",
      "  <32-hex digest>  <FILE>",
      "With --safetensors, print one line per tensor, in the file's header order:",
      "  <32-hex digest>  <FILE>:<tensor name>",
      "FILE '-' is standard input. A name holding a newline or backslash is escaped",
      "(\\n, \\\\) and its line starts with a backslash, as in sha256sum."
    })
final class DigestCommand implements Callable<Integer> {

  @Parameters(
      arity = "1..*",
      paramLabel = "FILE",
      description = "Files to digest ('-' for standard input).")
  List<String> files;

  @Option(names = "--safetensors", description = "Digest each tensor of a safetensors file.")
  boolean safetensors;

  @Option(
      names = "--threads",
      defaultValue = "0",
      description = "Threads per digest (0 = all cores, default ${DEFAULT-VALUE}).")
  int threads;

  @Option(
      names = "--json",
      description = "Print a JSON list of {file, tensor, dtype, shape, bytes, digest}.")
  boolean json;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() {
    if (threads < 0) {
      throw new CommandLine.ParameterException(
          spec.commandLine(), "--threads must be 0 (all cores) or positive");
    }
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    List<Map<String, Object>> records = new ArrayList<>();
    boolean failed = false;
    for (String file : files) {
      List<Map<String, Object>> fileRecords = new ArrayList<>();
      try {
        if (safetensors) {
          digestTensors(file, fileRecords);
        } else {
          digestBytes(file, fileRecords);
        }
      } catch (IOException | MxException e) {
        err.println("mx digest: error: " + describe(file, e));
        err.flush();
        failed = true;
      }
      for (Map<String, Object> r : fileRecords) {
        if (!json) {
          out.println(
              line(
                  (String) r.get("digest"),
                  file + (r.get("tensor") == null ? "" : ":" + r.get("tensor"))));
        }
      }
      out.flush();
      records.addAll(fileRecords);
    }
    if (json) {
      Json.print(out, records);
    }
    return failed ? 1 : 0;
  }

  private void digestBytes(String file, List<Map<String, Object>> records) throws IOException {
    if (file.equals("-")) {
      CountingChannel in = new CountingChannel(Channels.newChannel(System.in));
      String digest = FileDigest.digestStream(in, threads);
      records.add(record(file, null, null, null, in.count, digest));
      return;
    }
    Path path = readable(file);
    try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ)) {
      long size = channel.size();
      // procfs files are "regular" with size 0 but have content: stream those like pipes.
      if (Files.isRegularFile(path) && size > 0) {
        records.add(
            record(
                file,
                null,
                null,
                null,
                size,
                FileDigest.digestRegular(path, channel, size, threads)));
      } else {
        CountingChannel in = new CountingChannel(channel);
        String digest = FileDigest.digestStream(in, threads);
        records.add(record(file, null, null, null, in.count, digest));
      }
    }
  }

  private void digestTensors(String file, List<Map<String, Object>> records) throws IOException {
    Path path = file.equals("-") ? null : readable(file);
    if (path == null || !Files.isRegularFile(path) || Files.size(path) == 0) {
      // A stream has no random access: take it into memory, then digest each tensor there.
      try (Arena arena = Arena.ofShared();
          ReadableByteChannel in =
              path == null ? Channels.newChannel(System.in) : FileChannel.open(path)) {
        byte[] all = Channels.newInputStream(in).readAllBytes();
        MemorySegment bytes = arena.allocate(Math.max(all.length, 1), 4096).asSlice(0, all.length);
        MemorySegment.copy(MemorySegment.ofArray(all), 0, bytes, 0, all.length);
        try (SafetensorsFile st = SafetensorsFile.parse(bytes, file)) {
          for (SafetensorsTensor t : st.tensors()) {
            records.add(
                record(
                    file,
                    t.name(),
                    t.dtype().safetensorsName(),
                    t.shape().dims(),
                    t.byteSize(),
                    ShardDigest.digest(t.data(), threads)));
          }
        }
      }
      return;
    }
    SafetensorsIndex index = SafetensorsFile.index(path);
    try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ)) {
      for (SafetensorsIndex.Entry t : index.entries()) {
        records.add(
            record(
                file,
                t.name(),
                t.dtype().safetensorsName(),
                t.shape().dims(),
                t.byteSize(),
                FileDigest.digestRange(
                    channel, file, index.dataStart() + t.begin(), t.byteSize(), threads)));
      }
    }
  }

  /**
   * {@code sha256sum}'s convention: a name holding a backslash or newline is printed with {@code
   * \\} and {@code \n} and its line starts with a backslash, so every record stays on one line.
   */
  static String line(String digest, String name) {
    if (name.indexOf('\\') < 0 && name.indexOf('\n') < 0 && name.indexOf('\r') < 0) {
      return digest + "  " + name;
    }
    String escaped = name.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r");
    return "\\" + digest + "  " + escaped;
  }

  /** Counts the bytes a stream delivered, for the record's {@code bytes}. */
  private static final class CountingChannel implements ReadableByteChannel {
    private final ReadableByteChannel in;
    long count;

    CountingChannel(ReadableByteChannel in) {
      this.in = in;
    }

    @Override
    public int read(ByteBuffer dst) throws IOException {
      int n = in.read(dst);
      if (n > 0) {
        count += n;
      }
      return n;
    }

    @Override
    public boolean isOpen() {
      return in.isOpen();
    }

    @Override
    public void close() throws IOException {
      in.close();
    }
  }

  /**
   * The path of a named input, refused before it is opened unless it is a regular file or a block
   * device: opening a FIFO blocks until a writer comes, and a character device ({@code /dev/zero})
   * never ends, so either would hang the command (fault catalogue D33, D34, C49). A stream is still
   * digested when the user asks for one with {@code -}.
   */
  static Path readable(String file) throws IOException {
    Path path = Path.of(file);
    if (Files.isDirectory(path)) {
      throw new IOException(file + ": is a directory");
    }
    if (!Files.exists(path)) {
      throw new NoSuchFileException(file);
    }
    String kind = nonRegularKind(path);
    if (kind != null) {
      throw new IOException(
          file
              + ": is a "
              + kind
              + ", not a regular file (it could block or never end); to digest a stream pipe it"
              + " in: mx digest - < "
              + file);
    }
    return path;
  }

  /** What {@code path} is when it is neither a regular file nor a block device, else null. */
  private static String nonRegularKind(Path path) throws IOException {
    int mode = (Integer) Files.getAttribute(path, "unix:mode");
    return switch (mode & 0170000) {
      case 0100000, 0060000 -> null; // regular file, block device
      case 0010000 -> "FIFO";
      case 0020000 -> "character device";
      case 0140000 -> "socket";
      default -> "special file";
    };
  }

  private static Map<String, Object> record(
      String file, String tensor, String dtype, long[] shape, long bytes, String digest) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("file", file);
    m.put("tensor", tensor);
    m.put("dtype", dtype);
    m.put("shape", shape);
    m.put("bytes", bytes);
    m.put("digest", digest);
    return m;
  }

  /** One line naming the file; the JDK's bare-path messages get the reason added. */
  private static String describe(String file, Exception e) {
    if (e instanceof NoSuchFileException) {
      return file + ": no such file";
    }
    if (e instanceof AccessDeniedException) {
      return file + ": permission denied";
    }
    String message = e.getMessage() == null ? e.toString() : e.getMessage();
    return message.contains(file) ? message : file + ": " + message;
  }
}
