/** The refit runtime: publisher, receiver, wire policies, gates, re-slice, casts, verification. */
package dev.mx.refit;
