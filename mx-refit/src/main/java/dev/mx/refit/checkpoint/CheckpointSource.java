package dev.mx.refit.checkpoint;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.annotation.Experimental;
import dev.mx.api.digest.DigestProvider;
import dev.mx.api.digest.TileDigests;
import dev.mx.api.metadata.PublishedShard;
import dev.mx.api.metadata.PublishedTensor;
import dev.mx.api.metadata.ShardTable;
import dev.mx.api.transport.Transport;
import dev.mx.api.util.Settings;
import dev.mx.digest.safetensors.SafetensorsFile;
import dev.mx.digest.safetensors.SafetensorsIndex;
import dev.mx.refit.DiscoveredSources;
import dev.mx.refit.embed.StoreDiscovery;
import dev.mx.refit.publish.Publisher;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A directory of safetensors files (a Hugging Face checkpoint: its tensor names and global shapes)
 * as a refit source. Each file is memory mapped read-only, so a receiver copies straight from the
 * page cache; each tensor is one whole shard at offset zero, with the shard digest and tile digests
 * a trainer would publish, so a receiver verifies what it read from a checkpoint exactly as from a
 * trainer.
 *
 * <p>Digests are computed once and cached beside each file ({@code FILE.mx-digests.json}, see
 * {@link DigestCache}), valid while the file's size and modification time, the digest and the tile
 * size are those recorded; a directory that cannot be written is digested on every open.
 *
 * <p>A mapped file that another process truncates faults on the next access to a page past its new
 * end. mx reads mapped files only with Java memory access (the mem transport's copies, the
 * digests), where the JVM turns that fault into an {@link InternalError} instead of a crash; {@link
 * #changedOr} then names the file, and {@link #requireUnchanged} checks before each read that every
 * file is as mapped. A file rewritten in place with other bytes fails the receiver's verification
 * against the digests recorded here.
 *
 * <p>The step a checkpoint holds is its files' {@code __metadata__} {@value #STEP_KEY}, when they
 * agree on one. Close to unmap.
 */
@Experimental
public final class CheckpointSource implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(CheckpointSource.class);

  /** The {@code __metadata__} key holding the training step a checkpoint file was written at. */
  public static final String STEP_KEY = "mx.step";

  /** The dtypes a checkpoint source serves: the receivers cast among them. */
  public static final Set<DType> PLAIN_DTYPES = EnumSet.of(DType.BF16, DType.F16, DType.F32);

  /** One tensor of the checkpoint, a slice of its file's mapping. */
  public record Tensor(
      String name,
      DType dtype,
      Shape shape,
      Path file,
      MemorySegment data,
      String digest,
      TileDigests tiles) {}

  /** A file's identity on disk: a change of any part means the mapping no longer shows it. */
  record FileState(long size, long modifiedNanos, Object fileKey) {
    static FileState of(Path file) throws IOException {
      BasicFileAttributes a = Files.readAttributes(file, BasicFileAttributes.class);
      return new FileState(a.size(), a.lastModifiedTime().to(TimeUnit.NANOSECONDS), a.fileKey());
    }

    String describe() {
      return size + " bytes, modified at " + modifiedNanos + " ns";
    }
  }

  private record MappedFile(Path path, FileState state, SafetensorsIndex index) {}

  private final Path dir;
  private final Arena arena;
  private final List<MappedFile> files;
  private final Map<String, Tensor> tensors;
  private final Long step;
  private final String digestName;
  private int cachedFiles;

  private CheckpointSource(
      Path dir,
      Arena arena,
      List<MappedFile> files,
      Map<String, Tensor> tensors,
      Long step,
      String digestName) {
    this.dir = dir;
    this.arena = arena;
    this.files = files;
    this.tensors = tensors;
    this.step = step;
    this.digestName = digestName;
  }

  /**
   * Opens {@code dir} with the digest the publishers use ({@link DigestProvider#registry()}) and
   * their tile size ({@link Publisher#TILE_BYTES_PROPERTY}).
   *
   * @throws CheckpointException naming the directory or file at fault
   */
  public static CheckpointSource open(Path dir) {
    long tileBytes =
        Settings.system()
            .integer(
                Publisher.TILE_BYTES_PROPERTY,
                Publisher.TILE_BYTES_ENV,
                Publisher.DEFAULT_TILE_BYTES);
    return open(dir, DigestProvider.registry().select(), tileBytes);
  }

  /**
   * Opens {@code dir}: every {@code *.safetensors} file in it (not in subdirectories), in name
   * order, mapped; digests loaded from the cache or computed with {@code digest} (tiles of {@code
   * tileBytes}; 0 for none) and cached.
   *
   * @throws CheckpointException naming the directory or file at fault: none found, a malformed
   *     header, a tensor in two files, files that disagree on their step, a file that changed while
   *     it was digested
   */
  @SuppressWarnings("MustBeClosedChecker") // the arena is the source's, closed by close()
  public static CheckpointSource open(Path dir, DigestProvider digest, long tileBytes) {
    Objects.requireNonNull(dir, "dir");
    Objects.requireNonNull(digest, "digest");
    List<Path> paths = safetensorsIn(dir);
    Arena arena = Arena.ofShared();
    try {
      List<MappedFile> files = new ArrayList<>();
      Map<String, Tensor> tensors = new LinkedHashMap<>();
      Long step = null;
      Path stepFile = null;
      for (Path p : paths) {
        MappedFile f = map(p, arena, tensors);
        files.add(f);
        String s = f.index().metadata().get(STEP_KEY);
        if (s != null) {
          long fileStep = parseStep(p, s);
          if (step != null && step != fileStep) {
            throw new CheckpointException(
                p,
                "holds step "
                    + fileStep
                    + " ("
                    + STEP_KEY
                    + " in its metadata) but "
                    + stepFile.getFileName()
                    + " holds step "
                    + step
                    + ": the directory mixes checkpoints");
          }
          step = fileStep;
          stepFile = p;
        }
      }
      CheckpointSource done =
          new CheckpointSource(dir, arena, List.copyOf(files), tensors, step, digest.name());
      for (MappedFile f : files) {
        done.cachedFiles += done.digest(f, digest, tileBytes) ? 1 : 0;
      }
      LOG.info(
          "checkpoint {}: {} tensor(s), {} bytes in {} file(s), step {}; digests of {} file(s) from"
              + " the cache",
          dir,
          tensors.size(),
          done.byteSize(),
          files.size(),
          step == null ? "unknown" : step,
          done.cachedFiles);
      return done;
    } catch (RuntimeException | Error e) {
      arena.close();
      throw e;
    }
  }

  private static List<Path> safetensorsIn(Path dir) {
    if (!Files.isDirectory(dir)) {
      throw new CheckpointException(
          dir, Files.exists(dir) ? "is not a directory" : "no such directory");
    }
    List<Path> paths;
    try (Stream<Path> s = Files.list(dir)) {
      paths =
          s.filter(p -> p.getFileName().toString().endsWith(".safetensors"))
              .filter(Files::isRegularFile)
              .sorted(Comparator.comparing(p -> p.getFileName().toString()))
              .toList();
    } catch (IOException e) {
      throw new CheckpointException(dir, "cannot be listed: " + e.getMessage(), e);
    }
    if (paths.isEmpty()) {
      throw new CheckpointException(dir, "holds no *.safetensors file");
    }
    return paths;
  }

  /** Maps {@code p} and adds its tensors (without digests yet) to {@code into}. */
  private static MappedFile map(Path p, Arena arena, Map<String, Tensor> into) {
    try (FileChannel ch = FileChannel.open(p, StandardOpenOption.READ)) {
      FileState state = FileState.of(p);
      SafetensorsIndex index = SafetensorsFile.index(p);
      MemorySegment mapped = ch.map(FileChannel.MapMode.READ_ONLY, 0, state.size(), arena);
      for (SafetensorsIndex.Entry e : index.entries()) {
        Tensor before = into.get(e.name());
        if (before != null) {
          throw new CheckpointException(
              p,
              "tensor '"
                  + e.name()
                  + "' is also in "
                  + before.file().getFileName()
                  + "; which one?");
        }
        MemorySegment data = mapped.asSlice(index.dataStart() + e.begin(), e.byteSize());
        into.put(e.name(), new Tensor(e.name(), e.dtype(), e.shape(), p, data, null, null));
      }
      return new MappedFile(p, state, index);
    } catch (NoSuchFileException e) {
      throw new CheckpointException(p, "vanished while it was opened", e);
    } catch (IOException e) {
      throw new CheckpointException(p, "cannot be read: " + e.getMessage(), e);
    } catch (IllegalArgumentException e) {
      // A malformed header (SafetensorsException) names the file and tensor itself.
      throw new CheckpointException(p, e.getMessage(), e);
    }
  }

  private static long parseStep(Path p, String s) {
    try {
      long v = Long.parseLong(s.trim());
      if (v < 0) {
        throw new NumberFormatException();
      }
      return v;
    } catch (NumberFormatException e) {
      throw new CheckpointException(
          p, STEP_KEY + " in its metadata is '" + s + "', not a step (a number >= 0)");
    }
  }

  /**
   * Gives {@code f}'s tensors their digests, from the cache when it is valid, else computed and
   * cached. Returns whether they came from the cache.
   */
  private boolean digest(MappedFile f, DigestProvider digest, long tileBytes) {
    List<Tensor> own = tensors.values().stream().filter(t -> t.file().equals(f.path())).toList();
    DigestCache cache = new DigestCache(f.path(), f.state(), digest.name(), tileBytes);
    Map<String, DigestCache.Digests> found = cache.load(own);
    boolean fromCache = found != null;
    if (!fromCache) {
      try {
        found = DigestCache.compute(own, digest, tileBytes);
      } catch (InternalError e) {
        throw changedOr(e);
      }
      requireUnchanged(f);
      cache.store(found);
    }
    for (Tensor t : own) {
      DigestCache.Digests d = found.get(t.name());
      tensors.put(
          t.name(),
          new Tensor(t.name(), t.dtype(), t.shape(), t.file(), t.data(), d.digest(), d.tiles()));
    }
    return fromCache;
  }

  /** The directory. */
  public Path dir() {
    return dir;
  }

  /** The files, in name order. */
  public List<Path> files() {
    return files.stream().map(MappedFile::path).toList();
  }

  /** Every tensor, files in name order, each in header order. */
  public List<Tensor> tensors() {
    return List.copyOf(tensors.values());
  }

  /** The tensor named {@code name}, or null. */
  public Tensor tensor(String name) {
    return tensors.get(name);
  }

  /** The step its files' metadata name ({@value #STEP_KEY}), or null when none does. */
  public Long step() {
    return step;
  }

  /** The digest the tensors are listed with. */
  public String digestName() {
    return digestName;
  }

  /** How many files' digests came from their cache instead of being computed at open. */
  public int filesDigestedFromCache() {
    return cachedFiles;
  }

  /** The bytes of every tensor. */
  public long byteSize() {
    long n = 0;
    for (Tensor t : tensors.values()) {
      n += t.data().byteSize();
    }
    return n;
  }

  /**
   * Checks that the checkpoint holds every tensor of {@code expected} (Hugging Face name to global
   * shape) with that shape, in a dtype of {@link #PLAIN_DTYPES}. Tensors the model does not name
   * are left alone (a receiver reads only what it needs).
   *
   * @throws CheckpointException naming the file and tensor, or the directory and the first tensor
   *     missing
   */
  public void requireTensors(Map<String, Shape> expected) {
    for (Map.Entry<String, Shape> e : expected.entrySet()) {
      Tensor t = tensors.get(e.getKey());
      if (t == null) {
        throw new CheckpointException(
            dir,
            "has no tensor '"
                + e.getKey()
                + "' (the model's, shape "
                + e.getValue()
                + ") in any of its "
                + files.size()
                + " file(s)");
      }
      if (!t.shape().equals(e.getValue())) {
        throw new CheckpointException(
            t.file(),
            "tensor '"
                + t.name()
                + "' has shape "
                + t.shape()
                + " but the model's is "
                + e.getValue());
      }
      if (!PLAIN_DTYPES.contains(t.dtype())) {
        throw new CheckpointException(
            t.file(),
            "tensor '"
                + t.name()
                + "' is "
                + t.dtype().torchName()
                + " ("
                + t.dtype().safetensorsName()
                + "); a checkpoint source serves bf16, f16 or f32 weights");
      }
    }
  }

  /**
   * The checkpoint as the sources of one publisher, {@code transport}'s own session: each file's
   * mapping is registered with {@code transport} (in this process, e.g. the mem transport), each
   * tensor one whole shard with its digests. The registrations live as long as the transport.
   */
  public DiscoveredSources sources(Transport transport) {
    List<PublishedTensor> published = new ArrayList<>(tensors.size());
    for (Tensor t : tensors.values()) {
      if (t.data().byteSize() > 0) {
        transport.register(t.data());
      }
      long[] origin = new long[t.shape().rank()];
      PublishedShard shard =
          new PublishedShard(
              transport.localSession(),
              0,
              t.data().address(),
              origin,
              t.shape(),
              t.digest(),
              t.tiles(),
              step);
      published.add(
          new PublishedTensor(
              t.name(),
              t.dtype().torchLabel(),
              t.dtype().elementSize(),
              t.shape(),
              List.of(shard)));
    }
    ShardTable table =
        new ShardTable(transport.localSession(), "", transport.localMetadata(), published, step);
    return StoreDiscovery.merge(List.of(table), step);
  }

  /**
   * Checks that every file is as it was mapped (size, modification time, the same file).
   *
   * @throws CheckpointException naming the first file that changed and how
   */
  public void requireUnchanged() {
    for (MappedFile f : files) {
      requireUnchanged(f);
    }
  }

  private static void requireUnchanged(MappedFile f) {
    String change = changeOf(f);
    if (change != null) {
      throw new CheckpointException(f.path(), change);
    }
  }

  /** How {@code f} changed since it was mapped, or null when it did not. */
  private static String changeOf(MappedFile f) {
    FileState now;
    try {
      now = FileState.of(f.path());
    } catch (IOException e) {
      return "was removed or cannot be read since it was mapped ("
          + e
          + "); nothing of it was installed";
    }
    if (now.equals(f.state())) {
      return null;
    }
    return "changed since it was mapped (was "
        + f.state().describe()
        + ", now "
        + now.describe()
        + (Objects.equals(now.fileKey(), f.state().fileKey()) ? "" : ", another file")
        + "); nothing of it was installed";
  }

  /**
   * What a fault reading the mapping means: the {@link CheckpointException} naming the first file
   * that changed, with {@code fault} as its cause, or {@code fault} itself when every file is as
   * mapped.
   */
  public RuntimeException changedOr(Throwable fault) {
    for (MappedFile f : files) {
      String change = changeOf(f);
      if (change != null) {
        return new CheckpointException(f.path(), change, fault);
      }
    }
    return fault instanceof RuntimeException r
        ? r
        : new CheckpointException(dir, "a read of its mapping failed: " + fault, fault);
  }

  /** Unmaps the files (idempotent); no reader may touch a tensor afterwards. */
  @Override
  public void close() {
    if (arena.scope().isAlive()) {
      arena.close();
    }
  }
}
