package dev.mx.cli;

import dev.mx.api.error.MxException;
import dev.mx.digest.ShardDigest;
import dev.mx.digest.safetensors.SafetensorsFile;
import dev.mx.digest.safetensors.SafetensorsTensor;
import java.io.IOException;
import java.io.PrintWriter;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
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
 * {@code mx digest FILE...}: the shard digest of each file's raw bytes, printed like {@code sha256sum}
 * (ARCHITECTURE §5.2); with {@code --safetensors}, one line per tensor in header order. Files are mapped,
 * never copied to the heap. A file that cannot be digested is reported on stderr and the others are still
 * digested; the exit code is then 1.
 */
@Command(name = "digest", mixinStandardHelpOptions = true,
    description = {"Print the ModelExpress shard digest of each FILE's bytes, like sha256sum:",
        "  <32-hex digest>  <FILE>",
        "With --safetensors, print one line per tensor, in the file's header order:",
        "  <32-hex digest>  <FILE>:<tensor name>"})
final class DigestCommand implements Callable<Integer> {

  @Parameters(arity = "1..*", paramLabel = "FILE", description = "Files to digest.")
  List<String> files;

  @Option(names = "--safetensors", description = "Digest each tensor of a safetensors file.")
  boolean safetensors;

  @Option(names = "--threads", defaultValue = "0",
      description = "Threads per digest (0 = all cores, default ${DEFAULT-VALUE}).")
  int threads;

  @Option(names = "--json", description = "Print a JSON list of {file, tensor, dtype, shape, bytes, digest}.")
  boolean json;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() {
    if (threads < 0) {
      throw new CommandLine.ParameterException(spec.commandLine(), "--threads must be 0 (all cores) or positive");
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
          out.println(r.get("digest") + "  " + file + (r.get("tensor") == null ? "" : ":" + r.get("tensor")));
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
    Path path = readable(file);
    try (Arena arena = Arena.ofShared(); FileChannel channel = FileChannel.open(path, StandardOpenOption.READ)) {
      MemorySegment bytes = channel.map(FileChannel.MapMode.READ_ONLY, 0, channel.size(), arena);
      records.add(record(file, null, null, null, bytes.byteSize(), ShardDigest.digest(bytes, threads)));
    }
  }

  private void digestTensors(String file, List<Map<String, Object>> records) throws IOException {
    try (SafetensorsFile st = SafetensorsFile.open(readable(file))) {
      for (SafetensorsTensor t : st.tensors()) {
        records.add(record(file, t.name(), t.dtype().safetensorsName(), t.shape().dims(), t.byteSize(),
            ShardDigest.digest(t.data(), threads)));
      }
    }
  }

  private static Path readable(String file) throws IOException {
    Path path = Path.of(file);
    if (Files.isDirectory(path)) {
      throw new IOException(file + ": is a directory");
    }
    return path;
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
