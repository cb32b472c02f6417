/** Tests of the control-plane client against the golden vectors and a real server. */
package dev.mx.rl.client;
