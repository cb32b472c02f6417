package dev.mx.layout.trainer;

import dev.mx.api.Shape;
import dev.mx.layout.LayoutException;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * One Megatron parameter as the alias builder sees it (ModelExpress; ARCHITECTURE §7.6 {@code
 * MegatronTensorSpec}): the local tensor (shape and strides, which must be contiguous to be
 * published), its role, the Hugging Face names it publishes, the global shape, and where the local
 * tensor sits in it.
 *
 * @param name the Megatron parameter name (also the name of the buffer that holds it)
 * @param localStrides element strides of the local view; aliases are only possible when row-major
 * @param shardAxis the split axis for {@link Placement#SHARD}, null for {@link Placement#REPLICATE}
 * @param localShardRange {@code {lo, hi}} on the shard axis, null for {@link Placement#REPLICATE}
 * @param extras role parameters: {@code gated_mlp_order}; {@code num_heads}, {@code num_kv_heads},
 *     {@code head_dim}, {@code qkv_interleave} (global QKV) or {@code num_heads_local}, {@code
 *     num_kv_heads_local} (legacy QKV)
 */
public record MegatronTensorSpec(
    String name,
    Shape localShape,
    long[] localStrides,
    MegatronRole role,
    List<String> hfNames,
    Shape globalShape,
    Placement placement,
    Integer shardAxis,
    long[] localShardRange,
    Map<String, String> extras) {

  public MegatronTensorSpec {
    if (name == null || name.isBlank()) {
      throw new LayoutException("Megatron tensor spec has an empty name");
    }
    Objects.requireNonNull(localShape, "local shape of " + name);
    Objects.requireNonNull(role, "role of " + name);
    Objects.requireNonNull(globalShape, "global shape of " + name);
    Objects.requireNonNull(placement, "placement of " + name);
    localStrides = localStrides == null ? localShape.rowMajorStrides() : localStrides.clone();
    if (hfNames == null || hfNames.isEmpty()) {
      throw new LayoutException("Megatron tensor '" + name + "': no Hugging Face names");
    }
    hfNames = List.copyOf(hfNames);
    if (new HashSet<>(hfNames).size() != hfNames.size()) {
      throw new LayoutException(
          "Megatron tensor '" + name + "': Hugging Face names are not unique: " + hfNames);
    }
    for (String hf : hfNames) {
      if (hf.isBlank()) {
        throw new LayoutException("Megatron tensor '" + name + "': a Hugging Face name is blank");
      }
    }
    for (int d = 0; d < globalShape.rank(); d++) {
      if (globalShape.dim(d) <= 0) {
        throw new LayoutException(
            "Megatron tensor '"
                + name
                + "': global shape "
                + globalShape
                + " has a non-positive extent in dim "
                + d);
      }
    }
    if (localStrides.length != localShape.rank()) {
      throw new LayoutException(
          "Megatron tensor '"
              + name
              + "': strides "
              + Arrays.toString(localStrides)
              + " do not match the local shape "
              + localShape);
    }
    if (placement == Placement.SHARD) {
      if (shardAxis == null || localShardRange == null) {
        throw new LayoutException(
            "Megatron tensor '" + name + "': SHARD placement needs a shard axis and a range");
      }
      if (localShardRange.length != 2) {
        throw new LayoutException(
            "Megatron tensor '"
                + name
                + "': shard range must be {lo, hi}, got "
                + Arrays.toString(localShardRange));
      }
      if (shardAxis < 0 || shardAxis >= localShape.rank()) {
        throw new LayoutException(
            "Megatron tensor '"
                + name
                + "': shard axis "
                + shardAxis
                + " is not a dim of "
                + localShape);
      }
      localShardRange = localShardRange.clone();
    } else if (shardAxis != null || localShardRange != null) {
      throw new LayoutException(
          "Megatron tensor '" + name + "': REPLICATE placement takes no shard axis or range");
    }
    extras =
        extras == null ? Map.of() : java.util.Collections.unmodifiableMap(new TreeMap<>(extras));
  }

  /** A contiguous shard along {@code axis} covering {@code [lo, hi)} of the global tensor. */
  public static MegatronTensorSpec shard(
      String name,
      Shape localShape,
      MegatronRole role,
      List<String> hfNames,
      Shape globalShape,
      int axis,
      long lo,
      long hi,
      Map<String, String> extras) {
    return new MegatronTensorSpec(
        name,
        localShape,
        null,
        role,
        hfNames,
        globalShape,
        Placement.SHARD,
        axis,
        new long[] {lo, hi},
        extras);
  }

  /** A contiguous full replica. */
  public static MegatronTensorSpec replicate(
      String name,
      Shape localShape,
      MegatronRole role,
      List<String> hfNames,
      Shape globalShape,
      Map<String, String> extras) {
    return new MegatronTensorSpec(
        name,
        localShape,
        null,
        role,
        hfNames,
        globalShape,
        Placement.REPLICATE,
        null,
        null,
        extras);
  }

  /** The same spec viewed through other strides (e.g. a transposed, non-contiguous view). */
  public MegatronTensorSpec withStrides(long[] strides) {
    return new MegatronTensorSpec(
        name,
        localShape,
        strides,
        role,
        hfNames,
        globalShape,
        placement,
        shardAxis,
        localShardRange,
        extras);
  }

  @Override
  public long[] localStrides() {
    return localStrides.clone();
  }

  @Override
  public long[] localShardRange() {
    return localShardRange == null ? null : localShardRange.clone();
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof MegatronTensorSpec s
        && name.equals(s.name)
        && localShape.equals(s.localShape)
        && Arrays.equals(localStrides, s.localStrides)
        && role == s.role
        && hfNames.equals(s.hfNames)
        && globalShape.equals(s.globalShape)
        && placement == s.placement
        && Objects.equals(shardAxis, s.shardAxis)
        && Arrays.equals(localShardRange, s.localShardRange)
        && extras.equals(s.extras);
  }

  @Override
  public int hashCode() {
    return Objects.hash(
        name,
        localShape,
        Arrays.hashCode(localStrides),
        role,
        hfNames,
        globalShape,
        placement,
        shardAxis,
        Arrays.hashCode(localShardRange),
        extras);
  }

  @Override
  public String toString() {
    return "MegatronTensorSpec["
        + name
        + " "
        + role.label()
        + " local "
        + localShape
        + " global "
        + globalShape
        + " "
        + placement
        + (shardAxis == null
            ? ""
            : " axis " + shardAxis + " range " + Arrays.toString(localShardRange))
        + " -> "
        + hfNames
        + "]";
  }
}
