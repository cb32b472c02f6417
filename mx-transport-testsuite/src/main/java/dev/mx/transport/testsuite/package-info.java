/**
 * The transport conformance suite. A backend module adds this jar at test scope and subclasses
 * {@link dev.mx.transport.testsuite.AbstractTransportConformanceTest} once, supplying its
 * endpoints; every backend then passes the same tests.
 */
package dev.mx.transport.testsuite;
