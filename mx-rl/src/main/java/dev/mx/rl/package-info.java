/**
 * ModelExpress's RL control plane for mx: an embeddable {@code RefitService} server with pluggable
 * backends, and the messages and stubs generated from {@code model_express/refit}'s proto (package
 * {@code dev.mx.rl.proto}).
 */
@Experimental(
    "the RefitService contract is ModelExpress's; mx's server and client API may still change")
package dev.mx.rl;

import dev.mx.api.annotation.Experimental;
