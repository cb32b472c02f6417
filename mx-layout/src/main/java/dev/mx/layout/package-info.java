/** Model layouts: Hugging Face configs, Megatron trainer shards, vLLM inference targets, the weight generator. */
package dev.mx.layout;
