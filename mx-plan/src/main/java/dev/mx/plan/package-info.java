/**
 * The reshard planner: turns recorded copies and published shards into byte reads (ModelExpress;
 * ARCHITECTURE §7.3).
 */
package dev.mx.plan;
