/** Tests of the mx:// metadata store against a real RefitServer. */
package dev.mx.rl.store;
