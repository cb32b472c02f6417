/**
 * {@code --metadata mx://host:port}: mx's {@code MetadataStore} and {@code WeightVersionStore} over
 * ModelExpress's RefitService. The central service keeps records only (workers, versions, one shard
 * record per slot); each publisher serves its tables and its directory entry from its own process
 * through {@code RefitWorkerService}. The mapping is in docs/RL-CONTROL-PLANE.md.
 */
package dev.mx.rl.store;
