/**
 * Installed engines as refit sources (fan-out): an inference rank that installed and verified a
 * step publishes its live weights as the shards of the global tensors they hold ({@link
 * dev.mx.refit.fanout.InstalledShards}), as a weight version of its own under the version protocol
 * ({@link dev.mx.refit.fanout.InstalledPublisher}), so later receivers (a slow rank, a new replica,
 * a second inference group) read from it as from a trainer. See README, "Sources".
 */
package dev.mx.refit.fanout;
