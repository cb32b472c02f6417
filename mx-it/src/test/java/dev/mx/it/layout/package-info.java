/**
 * End-to-end refits of real model layouts in one JVM: Megatron/FSDP publishers to vLLM receivers
 * over {@code mem}.
 */
package dev.mx.it.layout;
