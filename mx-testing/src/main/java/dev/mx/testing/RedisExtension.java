package dev.mx.testing;

import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A real {@link RedisServer} for a test class or a test. Registered on a static field it runs for
 * the whole class; on an instance field, one per test (e.g. for a test that kills it). Either way a
 * machine without {@code redis-server} skips the tests, saying why.
 *
 * <pre>{@code
 * @RegisterExtension static final RedisExtension REDIS = new RedisExtension();
 * ... new RedisMetadataStore(REDIS.uri(), gc) ...
 * }</pre>
 */
public final class RedisExtension
    implements BeforeAllCallback, AfterAllCallback, BeforeEachCallback, AfterEachCallback {
  private final String[] extraArgs;
  private RedisServer server;
  private boolean perClass;

  /** With extra {@code redis-server} arguments, e.g. {@code "--requirepass", "pw"}. */
  public RedisExtension(String... extraArgs) {
    this.extraArgs = extraArgs.clone();
  }

  @Override
  public void beforeAll(ExtensionContext context) throws Exception {
    perClass = true;
    server = RedisServer.start(extraArgs);
  }

  @Override
  public void beforeEach(ExtensionContext context) throws Exception {
    if (!perClass) {
      server = RedisServer.start(extraArgs);
    }
  }

  @Override
  public void afterEach(ExtensionContext context) throws Exception {
    if (!perClass) {
      stop();
    }
  }

  @Override
  public void afterAll(ExtensionContext context) throws Exception {
    stop();
  }

  private void stop() throws Exception {
    RedisServer s = server;
    server = null;
    if (s != null) {
      s.close();
    }
  }

  /** The running server (to kill or restart it). */
  public RedisServer server() {
    if (server == null) {
      throw new IllegalStateException(
          "no redis-server runs: use it from a test, with the extension registered"
              + " through @RegisterExtension");
    }
    return server;
  }

  /** {@code redis://127.0.0.1:PORT} of the running server. */
  public String uri() {
    return server().uri();
  }

  public int port() {
    return server().port();
  }
}
