/**
 * Guice wiring of the receiver: {@link dev.mx.refit.guice.ReceiverModule} plus one strategy module
 * per wire policy, chosen from {@code mx.receiver.wire}; modules only bind, nothing native starts
 * in them.
 */
package dev.mx.refit.guice;
