/** JMH benchmarks of the hot paths (digest, plan, transports). */
package dev.mx.bench;
