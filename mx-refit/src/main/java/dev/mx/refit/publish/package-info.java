/**
 * The publisher: serves a trainer's tensor shards through a transport and announces them in a
 * metadata store with digests, heartbeats and a clean STALE on close.
 */
package dev.mx.refit.publish;
