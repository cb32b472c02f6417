/**
 * The {@code cuda-ipc} transport: processes on one host read each other's device allocations,
 * exported with {@code cuIpcGetMemHandle} and mapped with {@code cuIpcOpenMemHandle}, by
 * device-to-device copies.
 */
package dev.mx.transport.cudaipc;
