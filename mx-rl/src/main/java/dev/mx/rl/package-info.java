/**
 * ModelExpress's RL control plane for mx: an embeddable {@code RefitService} server with pluggable
 * backends, and the messages and stubs generated from {@code model_express/refit}'s proto (package
 * {@code dev.mx.rl.proto}).
 */
package dev.mx.rl;
