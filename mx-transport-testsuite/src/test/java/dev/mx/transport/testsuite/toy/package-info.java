/**
 * A toy backend written from the transport kit by following CONTRIBUTING.md: a loopback TCP
 * transport that passes the conformance suite.
 */
package dev.mx.transport.testsuite.toy;
