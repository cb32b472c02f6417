/**
 * The mx exception hierarchy. Every exception carries the names at fault (tensor, shard, peer,
 * store) as fields, so callers can act on them and messages can name them.
 */
package dev.mx.api.error;
