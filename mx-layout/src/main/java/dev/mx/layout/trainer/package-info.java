/**
 * Trainer (publisher) layouts: what each Megatron-Core (TP × PP × EP) or FSDP rank holds in its
 * local buffers, and the Hugging Face–named alias shards it publishes from them (ModelExpress;
 * ARCHITECTURE §7.6).
 */
package dev.mx.layout.trainer;
