/**
 * The JSON request and plan format (ARCHITECTURE §5.3, docs/PLAN-FORMAT.md), snake_case on the
 * wire: what {@code mx plan} reads and writes, for any tool that exchanges plans with mx.
 */
package dev.mx.plan.json;
