/**
 * Checkpoints as refit sources: a directory of safetensors files, memory mapped, served to a
 * receiver in this process like a trainer's shard table, with digests computed once and cached
 * beside the files ({@link dev.mx.refit.checkpoint.CheckpointSource}); {@link
 * dev.mx.refit.checkpoint.CheckpointInstall} installs one into an engine's weights before it
 * follows live versions. See README, "Sources".
 */
package dev.mx.refit.checkpoint;
