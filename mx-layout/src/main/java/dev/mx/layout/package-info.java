/**
 * Model layouts: Hugging Face configs, Megatron and FSDP trainer shards, vLLM inference targets and
 * the synthetic weight generator; {@link dev.mx.layout.PlanningInventory} ties them into planner
 * inputs.
 */
package dev.mx.layout;
