/**
 * The client side of ModelExpress's RL control plane: requests as its Python clients encode them, a
 * blocking {@code RefitService} client, fresh worker ids, and fetching a shard's manifest from the
 * worker that published it with its digest checked.
 */
@Experimental(
    "the RefitService contract is ModelExpress's; mx's server and client API may still change")
package dev.mx.rl.client;

import dev.mx.api.annotation.Experimental;
