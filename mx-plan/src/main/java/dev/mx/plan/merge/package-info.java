/**
 * Replica merge of discovered shard tables (ModelExpress; ARCHITECTURE §7.5): one owner per exact
 * shard geometry, and the planner's {@link dev.mx.api.plan.SourceInfo} map with the
 * session-to-agent and session-to-device maps transports need.
 */
package dev.mx.plan.merge;
