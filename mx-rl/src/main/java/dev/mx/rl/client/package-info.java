/**
 * The client side of ModelExpress's RL control plane: requests as its Python clients encode them, a
 * blocking {@code RefitService} client, fresh worker ids, and fetching a shard's manifest from the
 * worker that published it with its digest checked.
 */
package dev.mx.rl.client;
