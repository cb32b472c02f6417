package dev.mx.api.metrics;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.ServiceConfigurationError;
import java.util.ServiceLoader;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Finding listeners and calling several as one, each shielded from the others' failures. */
public final class RefitListeners {
  private static final Logger LOG = LoggerFactory.getLogger(RefitListeners.class);

  private static final RefitListener NONE = new RefitListener() {};

  private RefitListeners() {}

  /** A listener that does nothing. */
  public static RefitListener none() {
    return NONE;
  }

  /**
   * The listeners on the class path ({@code META-INF/services/dev.mx.api.metrics.RefitListener}),
   * loaded once per JVM: mx-refit registers its JFR events there.
   */
  public static List<RefitListener> discovered() {
    return Discovered.LISTENERS;
  }

  /**
   * The JVM's listeners as one: {@link #discovered()} and those {@link #register registered} now (a
   * registration counts from the next call on). Receivers, version followers and leases always tell
   * this one.
   */
  public static RefitListener jvmWide() {
    return JvmWide.INSTANCE;
  }

  /**
   * Adds {@code listener} to {@link #jvmWide()} until the returned handle is closed: the way to
   * meter every receiver, version wait and lease of the JVM at once.
   */
  public static Registration register(RefitListener listener) {
    Objects.requireNonNull(listener, "listener");
    JvmWide.REGISTERED.add(listener);
    JvmWide.rebuild();
    return new Registration(listener);
  }

  /** A {@link #register registration}; closing it (again: nothing) removes the listener. */
  public static final class Registration implements AutoCloseable {
    private final RefitListener listener;
    private final AtomicBoolean closed = new AtomicBoolean();

    private Registration(RefitListener listener) {
      this.listener = listener;
    }

    @Override
    public void close() {
      if (closed.compareAndSet(false, true)) {
        JvmWide.REGISTERED.remove(listener);
        JvmWide.rebuild();
      }
    }
  }

  /**
   * The listeners as one: each call goes to every listener in order; a listener that throws is
   * logged at WARN and the others still run.
   */
  public static RefitListener of(List<? extends RefitListener> listeners) {
    List<RefitListener> l = List.copyOf(listeners);
    if (l.isEmpty()) {
      return NONE;
    }
    return new Composite(() -> l);
  }

  private static final class Discovered {
    static final List<RefitListener> LISTENERS = load();

    private static List<RefitListener> load() {
      List<RefitListener> found = new ArrayList<>();
      ServiceLoader<RefitListener> loader =
          ServiceLoader.load(RefitListener.class, RefitListeners.class.getClassLoader());
      for (ServiceLoader.Provider<RefitListener> p : loader.stream().toList()) {
        try {
          found.add(p.get());
        } catch (RuntimeException | ServiceConfigurationError e) {
          LOG.warn("refit listener {} could not be loaded: {}", p.type().getName(), e.toString());
        }
      }
      return List.copyOf(found);
    }
  }

  /** The discovered and the registered listeners, as they are at each call. */
  private static final class JvmWide {
    static final List<RefitListener> REGISTERED = new CopyOnWriteArrayList<>();
    private static volatile List<RefitListener> current = Discovered.LISTENERS;
    static final RefitListener INSTANCE = new Composite(() -> current);

    static synchronized void rebuild() {
      List<RefitListener> all = new ArrayList<>(Discovered.LISTENERS);
      all.addAll(REGISTERED);
      current = List.copyOf(all);
    }
  }

  /** Calls every listener; one that throws is logged and skipped. */
  private record Composite(Supplier<List<RefitListener>> listeners) implements RefitListener {

    private void each(String what, Consumer<RefitListener> call) {
      for (RefitListener l : listeners.get()) {
        try {
          call.accept(l);
        } catch (RuntimeException e) {
          LOG.warn(
              "refit listener {} failed in {}: {}", l.getClass().getName(), what, e.toString());
        }
      }
    }

    @Override
    public void refitStarted(Refit refit) {
      each("refitStarted", l -> l.refitStarted(refit));
    }

    @Override
    public void stageTimed(Refit refit, String stage, double seconds) {
      each("stageTimed", l -> l.stageTimed(refit, stage, seconds));
    }

    @Override
    public void shardsVerified(Refit refit, long verified, long unverifiable) {
      each("shardsVerified", l -> l.shardsVerified(refit, verified, unverifiable));
    }

    @Override
    public void verificationFailed(Refit refit, String source, String peer, String detail) {
      each("verificationFailed", l -> l.verificationFailed(refit, source, peer, detail));
    }

    @Override
    public void installed(Refit refit) {
      each("installed", l -> l.installed(refit));
    }

    @Override
    public void refitFinished(Refit refit, Outcome outcome) {
      each("refitFinished", l -> l.refitFinished(refit, outcome));
    }

    @Override
    public void versionWaited(String model, long step, double seconds) {
      each("versionWaited", l -> l.versionWaited(model, step, seconds));
    }

    @Override
    public void lease(String model, String versionId, String holder, LeaseAction action) {
      each("lease", l -> l.lease(model, versionId, holder, action));
    }

    @Override
    public void publishStageTimed(Publish publish, String stage, double seconds) {
      each("publishStageTimed", l -> l.publishStageTimed(publish, stage, seconds));
    }

    @Override
    public void published(Publish publish, double seconds, String state) {
      each("published", l -> l.published(publish, seconds, state));
    }
  }
}
