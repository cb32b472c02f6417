/** Tests of mx-rl against the golden vectors and a real server over loopback gRPC. */
package dev.mx.rl;
