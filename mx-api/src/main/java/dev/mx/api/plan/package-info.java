/**
 * The planning vocabulary shared by geometry sources, planners and receivers (ModelExpress;
 * ARCHITECTURE §7.3): recorded copies with their op chains, published shards and sources, the byte
 * segments a plan reads, and the {@link dev.mx.api.plan.PlanBuilder} SPI that turns one into the
 * other.
 */
package dev.mx.api.plan;
