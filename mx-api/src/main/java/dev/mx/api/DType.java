package dev.mx.api;

import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * Element types a tensor may hold, with their size and every label spelling mx accepts ({@code
 * torch.bfloat16}, {@code bfloat16}, {@code bf16}, safetensors {@code BF16}).
 */
public enum DType {
  BOOL(1, "bool", "bool", "BOOL"),
  U8(1, "uint8", "u8", "U8"),
  I8(1, "int8", "i8", "I8"),
  I16(2, "int16", "i16", "I16", "short"),
  I32(4, "int32", "i32", "I32", "int"),
  I64(8, "int64", "i64", "I64", "long"),
  F16(2, "float16", "f16", "F16", "half", "fp16"),
  BF16(2, "bfloat16", "bf16", "BF16"),
  F32(4, "float32", "f32", "F32", "float", "fp32"),
  F64(8, "float64", "f64", "F64", "double", "fp64"),
  F8_E4M3FN(1, "float8_e4m3fn", "f8_e4m3fn", "F8_E4M3", "e4m3", "fp8_e4m3"),
  F8_E5M2(1, "float8_e5m2", "f8_e5m2", "F8_E5M2", "e5m2", "fp8_e5m2");

  private final int elementSize;
  private final String torchName;
  private final String shortName;
  private final String safetensorsName;
  private final String[] aliases;

  DType(
      int elementSize,
      String torchName,
      String shortName,
      String safetensorsName,
      String... aliases) {
    this.elementSize = elementSize;
    this.torchName = torchName;
    this.shortName = shortName;
    this.safetensorsName = safetensorsName;
    this.aliases = aliases;
  }

  /** Bytes per element. */
  public int elementSize() {
    return elementSize;
  }

  /** The PyTorch name without the module prefix, e.g. {@code bfloat16}. */
  public String torchName() {
    return torchName;
  }

  /** The label ModelExpress writes into shard tables, e.g. {@code torch.bfloat16}. */
  public String torchLabel() {
    return "torch." + torchName;
  }

  /** The short label used on the command line and in reports, e.g. {@code bf16}. */
  public String shortName() {
    return shortName;
  }

  /** The dtype string of the safetensors header, e.g. {@code BF16}. */
  public String safetensorsName() {
    return safetensorsName;
  }

  /** True for the floating-point types (including fp8). */
  public boolean isFloatingPoint() {
    return switch (this) {
      case F16, BF16, F32, F64, F8_E4M3FN, F8_E5M2 -> true;
      default -> false;
    };
  }

  /**
   * Parses any accepted label. Like ModelExpress, only the part after the last {@code .} counts, so
   * {@code torch.bfloat16} and {@code bfloat16} are the same; matching ignores case.
   *
   * @throws IllegalArgumentException naming the label and listing the known ones
   */
  public static DType parse(String label) {
    if (label == null || label.isBlank()) {
      throw new IllegalArgumentException("dtype label is empty; known dtypes: " + knownLabels());
    }
    String bare = label.substring(label.lastIndexOf('.') + 1).trim();
    for (DType t : values()) {
      if (t.torchName.equalsIgnoreCase(bare)
          || t.shortName.equalsIgnoreCase(bare)
          || t.safetensorsName.equalsIgnoreCase(bare)
          || t.name().equalsIgnoreCase(bare)) {
        return t;
      }
      for (String alias : t.aliases) {
        if (alias.equalsIgnoreCase(bare)) {
          return t;
        }
      }
    }
    throw new IllegalArgumentException(
        "unknown dtype '" + label + "'; known dtypes: " + knownLabels());
  }

  private static String knownLabels() {
    return Arrays.stream(values())
        .map(t -> t.shortName + " (" + t.torchLabel() + ", " + t.safetensorsName + ")")
        .collect(Collectors.joining(", "));
  }

  @Override
  public String toString() {
    return shortName.toLowerCase(Locale.ROOT);
  }
}
