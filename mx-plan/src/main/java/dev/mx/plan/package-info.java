/**
 * The reshard planner: turns recorded copies and published shards into byte reads (ModelExpress
 * §3).
 */
package dev.mx.plan;
