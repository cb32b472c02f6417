/**
 * {@code mx demo} end to end: real child JVMs (or threads), the report, --dump checked against the
 * generator, faults.
 */
package dev.mx.it.demo;
