/**
 * The named stages a refit runs through (discovery checks, element coverage, shard staging,
 * verification, local copies, install, records), each its own class so a reader finds each step and
 * a stage can be swapped.
 */
package dev.mx.refit.stage;
