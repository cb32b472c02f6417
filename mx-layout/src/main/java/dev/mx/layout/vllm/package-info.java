/**
 * Inference (receiver) layouts of vLLM under TP/EP: parameter names and shapes, the recorded copies
 * a {@link dev.mx.api.refit.GeometrySource} emits, and an independent reference of every parameter
 * element.
 */
package dev.mx.layout.vllm;
