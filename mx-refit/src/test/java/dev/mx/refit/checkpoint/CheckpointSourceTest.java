package dev.mx.refit.checkpoint;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.digest.DigestProvider;
import dev.mx.api.error.DigestMismatchException;
import dev.mx.digest.safetensors.SafetensorsTensor;
import dev.mx.digest.safetensors.SafetensorsWriter;
import dev.mx.refit.LiveWeights;
import dev.mx.refit.ReceiverConfig;
import dev.mx.refit.embed.TargetGeometry;
import dev.mx.refit.embed.TargetGeometry.Part;
import dev.mx.refit.embed.TpShard;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A checkpoint directory serves a receiver in this process: resharded into a fused, tensor-parallel
 * engine geometry exactly, digests cached beside the files and reused, and every fault named by
 * file and tensor with nothing installed.
 */
class CheckpointSourceTest {
  private static final DigestProvider DIGEST = DigestProvider.registry().select();

  /** Tiles of 32 bytes: the 128-byte tensors get tile digests, the norm does not. */
  private static final long TILE = 32;

  @TempDir Path dir;

  /** Element i of tensor {@code name}: distinct across tensors and positions. */
  private static float value(String name, long i) {
    return name.hashCode() % 1000 + i * 0.25f;
  }

  private static SafetensorsTensor f32(Arena arena, String name, Shape shape) {
    MemorySegment s = arena.allocate(shape.numel() * 4);
    for (long i = 0; i < shape.numel(); i++) {
      s.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i, value(name, i));
    }
    return new SafetensorsTensor(name, DType.F32, shape, s);
  }

  /** Two files: q and k in the first, v and the norm in the second, both at step 7. */
  private void writeCheckpoint() throws IOException {
    try (Arena arena = Arena.ofConfined()) {
      SafetensorsWriter.write(
          dir.resolve("model-00001-of-00002.safetensors"),
          List.of(f32(arena, "q", Shape.of(8, 4)), f32(arena, "k", Shape.of(4, 4))),
          Map.of(CheckpointSource.STEP_KEY, "7"));
      SafetensorsWriter.write(
          dir.resolve("model-00002-of-00002.safetensors"),
          List.of(f32(arena, "v", Shape.of(4, 4)), f32(arena, "norm", Shape.of(4))),
          Map.of(CheckpointSource.STEP_KEY, "7"));
    }
  }

  /** Rank 1 of 2 of an engine with fused qkv (each part split on rows) and a whole norm. */
  private static TargetGeometry engineRank1() {
    return TargetGeometry.builder()
        .fused(
            "qkv",
            DType.F32,
            Part.of("q", TpShard.of(Shape.of(8, 4), 0, 1, 2)),
            Part.of("k", TpShard.of(Shape.of(4, 4), 0, 1, 2)),
            Part.of("v", TpShard.of(Shape.of(4, 4), 0, 1, 2)))
        .whole("norm", "norm", Shape.of(4), DType.F32)
        .build();
  }

  private CheckpointSource open() {
    return CheckpointSource.open(dir, DIGEST, TILE);
  }

  @ParameterizedTest(name = "in place: {0}")
  @ValueSource(booleans = {false, true})
  void installsTheEngineSlicesExactlyAndVerifiesThem(boolean inPlace) throws IOException {
    writeCheckpoint();
    TargetGeometry g = engineRank1();
    try (CheckpointSource cp = open();
        LiveWeights live = new LiveWeights(g.params())) {
      assertEquals(7L, cp.step());
      assertEquals(4, cp.tensors().size());
      assertNull(cp.tensor("norm").tiles(), "a single-tile tensor gets no tile digests");
      assertEquals(4, cp.tensor("q").tiles().digests().size());
      Map<String, Object> m =
          inPlace
              ? CheckpointInstall.installInPlace(
                  cp, cp.step(), 1, g, live, ReceiverConfig.defaults())
              : CheckpointInstall.install(cp, cp.step(), 1, g, live, ReceiverConfig.defaults());
      assertEquals(7L, live.lastStep());
      assertEquals(inPlace, m.get("checkpoint_in_place"));
      // qkv rows: q rows 4..7, k rows 2..3, v rows 2..3.
      float[] qkv = live.parameter("qkv").toArray(ValueLayout.JAVA_FLOAT);
      float[] want = new float[8 * 4];
      int at = 0;
      for (long i = 16; i < 32; i++) {
        want[at++] = value("q", i);
      }
      for (String kv : List.of("k", "v")) {
        for (long i = 8; i < 16; i++) {
          want[at++] = value(kv, i);
        }
      }
      assertArrayEquals(want, qkv);
      assertArrayEquals(
          new float[] {value("norm", 0), value("norm", 1), value("norm", 2), value("norm", 3)},
          live.parameter("norm").toArray(ValueLayout.JAVA_FLOAT));
      assertEquals(7L, m.get("checkpoint_step"));
      assertEquals((8 * 4 + 4 * 4 * 2 + 4) * 4L, m.get("checkpoint_bytes"));
      assertEquals((long) (8 * 4 + 4) * 4, m.get("bytes_received"));
      assertEquals(0L, m.get("unverifiable_shards"));
    }
  }

  @Test
  void digestsAreCachedBesideTheFilesAndRecomputedWhenAFileChanges() throws IOException {
    writeCheckpoint();
    Path first = dir.resolve("model-00001-of-00002.safetensors");
    String qDigest;
    try (CheckpointSource cp = open()) {
      assertEquals(0, cp.filesDigestedFromCache());
      qDigest = cp.tensor("q").digest();
      assertEquals(DIGEST.digest(cp.tensor("q").data()), qDigest);
    }
    assertTrue(Files.isRegularFile(DigestCache.cacheOf(first)));
    try (CheckpointSource cp = open()) {
      assertEquals(2, cp.filesDigestedFromCache());
      assertEquals(qDigest, cp.tensor("q").digest());
      assertEquals(
          open().tensors().stream().map(CheckpointSource.Tensor::digest).toList(),
          cp.tensors().stream().map(CheckpointSource.Tensor::digest).toList());
    }
    // Another modification time: that file is digested again; another tile size: both are.
    Files.setLastModifiedTime(first, FileTime.fromMillis(1_000_000));
    try (CheckpointSource cp = open()) {
      assertEquals(1, cp.filesDigestedFromCache());
    }
    try (CheckpointSource cp = CheckpointSource.open(dir, DIGEST, 64)) {
      assertEquals(0, cp.filesDigestedFromCache());
      assertEquals(2, cp.tensor("q").tiles().digests().size());
    }
    // A cache that is not JSON is ignored and rewritten, never trusted.
    Files.writeString(DigestCache.cacheOf(first), "{not json");
    try (CheckpointSource cp = CheckpointSource.open(dir, DIGEST, 64)) {
      assertEquals(1, cp.filesDigestedFromCache());
      assertEquals(qDigest, cp.tensor("q").digest());
    }
    try (CheckpointSource cp = CheckpointSource.open(dir, DIGEST, 64)) {
      assertEquals(2, cp.filesDigestedFromCache());
    }
  }

  @Test
  void aTensorOfAnotherShapeOrDtypeOrMissingIsNamedWithItsFile() throws IOException {
    writeCheckpoint();
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment codes = arena.allocate(4);
      SafetensorsWriter.write(
          dir.resolve("z-extra.safetensors"),
          List.of(new SafetensorsTensor("ids", DType.I8, Shape.of(4), codes)),
          Map.of());
    }
    try (CheckpointSource cp = open()) {
      CheckpointException shape =
          assertThrows(
              CheckpointException.class, () -> cp.requireTensors(Map.of("q", Shape.of(4, 4))));
      assertTrue(
          shape.getMessage().contains("model-00001-of-00002.safetensors")
              && shape.getMessage().contains("tensor 'q' has shape [8, 4]")
              && shape.getMessage().contains("the model's is [4, 4]"),
          shape.getMessage());
      CheckpointException missing =
          assertThrows(
              CheckpointException.class, () -> cp.requireTensors(Map.of("o", Shape.of(4))));
      assertTrue(
          missing.getMessage().contains(dir.toString())
              && missing.getMessage().contains("no tensor 'o'"),
          missing.getMessage());
      CheckpointException dtype =
          assertThrows(
              CheckpointException.class, () -> cp.requireTensors(Map.of("ids", Shape.of(4))));
      assertTrue(
          dtype.getMessage().contains("z-extra.safetensors")
              && dtype.getMessage().contains("'ids' is int8 (I8)"),
          dtype.getMessage());
      cp.requireTensors(Map.of("q", Shape.of(8, 4), "norm", Shape.of(4)));
    }
  }

  @Test
  void filesThatDisagreeOnTheStepOrRepeatATensorAreRefused() throws IOException {
    writeCheckpoint();
    try (Arena arena = Arena.ofConfined()) {
      SafetensorsWriter.write(
          dir.resolve("model-00003.safetensors"),
          List.of(f32(arena, "o", Shape.of(2))),
          Map.of(CheckpointSource.STEP_KEY, "8"));
    }
    CheckpointException step = assertThrows(CheckpointException.class, this::open);
    assertTrue(
        step.getMessage().contains("model-00003.safetensors: holds step 8")
            && step.getMessage().contains("holds step 7"),
        step.getMessage());
    try (Arena arena = Arena.ofConfined()) {
      SafetensorsWriter.write(
          dir.resolve("model-00003.safetensors"), List.of(f32(arena, "q", Shape.of(2))), Map.of());
    }
    CheckpointException twice = assertThrows(CheckpointException.class, this::open);
    assertTrue(
        twice.getMessage().contains("model-00003.safetensors: tensor 'q' is also in model-00001"),
        twice.getMessage());
    Path empty = Files.createDirectory(dir.resolve("empty"));
    CheckpointException none =
        assertThrows(CheckpointException.class, () -> CheckpointSource.open(empty, DIGEST, TILE));
    assertTrue(none.getMessage().contains("holds no *.safetensors file"), none.getMessage());
  }

  @Test
  void aFileTruncatedWhileMappedFailsClosedNamingItNeverCrashing() throws IOException {
    writeCheckpoint();
    Path second = dir.resolve("model-00002-of-00002.safetensors");
    TargetGeometry g = engineRank1();
    try (CheckpointSource cp = open();
        LiveWeights live = new LiveWeights(g.params())) {
      try (FileChannel ch = FileChannel.open(second, StandardOpenOption.WRITE)) {
        ch.truncate(0);
      }
      // A read of the truncated mapping faults; the JVM reports it instead of dying, and the
      // source names the file.
      MemorySegment v = cp.tensor("v").data();
      InternalError fault =
          assertThrows(
              InternalError.class, () -> v.toArray(ValueLayout.JAVA_BYTE), "SIGBUS as an error");
      CheckpointException named = assertInstanceOf(CheckpointException.class, cp.changedOr(fault));
      assertEquals(second, named.file());
      CheckpointException e =
          assertThrows(
              CheckpointException.class,
              () -> CheckpointInstall.install(cp, 7, 1, g, live, ReceiverConfig.defaults()));
      assertTrue(
          e.getMessage().contains(second.toString())
              && e.getMessage().contains("changed since it was mapped"),
          e.getMessage());
      assertEquals(-1, live.lastStep(), "nothing installed");
      assertEquals(0, live.installs());
    }
  }

  @Test
  void aFileRewrittenInPlaceWithItsTimeRestoredFailsVerification() throws IOException {
    writeCheckpoint();
    Path first = dir.resolve("model-00001-of-00002.safetensors");
    try (CheckpointSource cached = open()) {
      assertEquals(0, cached.filesDigestedFromCache());
    }
    FileTime was = Files.getLastModifiedTime(first);
    byte[] bytes = Files.readAllBytes(first);
    bytes[bytes.length - 3] ^= 0x40; // a byte of k, the file's last tensor
    Files.write(first, bytes);
    Files.setLastModifiedTime(first, was);
    TargetGeometry g = engineRank1();
    try (CheckpointSource cp = open();
        LiveWeights live = new LiveWeights(g.params())) {
      assertEquals(2, cp.filesDigestedFromCache(), "the cache looks valid");
      RuntimeException e =
          assertThrows(
              RuntimeException.class,
              () -> CheckpointInstall.install(cp, 7, 1, g, live, ReceiverConfig.defaults()));
      assertTrue(
          e instanceof DigestMismatchException || e.getCause() instanceof DigestMismatchException,
          e.toString());
      assertEquals(0, live.installs(), "nothing installed");
      // In place, the same failure leaves the weights torn: they were written before the check.
      RuntimeException torn =
          assertThrows(
              RuntimeException.class,
              () -> CheckpointInstall.installInPlace(cp, 7, 1, g, live, ReceiverConfig.defaults()));
      assertTrue(live.isTorn(), torn.toString());
      assertEquals(-1, live.lastStep());
    }
  }
}
