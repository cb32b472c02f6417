/** JMH benchmarks of the hot paths (digest, casts, re-slice). */
package dev.mx.bench;
