/**
 * {@code mx demo}, {@code mx publish} and {@code mx receive}: trainer and inference workers, the
 * stdio protocol that drives a worker in a child JVM, and the orchestrator that runs a whole refit
 * job and reports it.
 */
package dev.mx.cli.demo;
