/**
 * Trainer (publisher) layouts: what each Megatron-Core (TP × PP × EP) or FSDP rank holds in its
 * local buffers, and the Hugging Face–named alias shards it publishes from them (MX §5.1, §5.3).
 */
package dev.mx.layout.trainer;
