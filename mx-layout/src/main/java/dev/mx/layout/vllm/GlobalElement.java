package dev.mx.layout.vllm;

/** Element {@code flatIndex} (row-major) of the global Hugging Face tensor {@code tensor}. */
public record GlobalElement(String tensor, long flatIndex) {}
