package dev.mx.rl.client;

import dev.mx.rl.proto.WorkerRegistration;
import dev.mx.rl.proto.WorkerRole;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps one worker registered: registers it once (a refusal is thrown to the caller), then
 * re-registers it every third of its TTL (at least every 100 ms), as ModelExpress's clients do. A
 * failed renewal is logged and counted, never thrown: the next one may succeed, and if none does
 * the registration expires, which is how the control plane learns that the worker is gone.
 */
public final class WorkerHeartbeat implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(WorkerHeartbeat.class);

  private final RefitClient client;
  private final String workerId;
  private final WorkerRole role;
  private final String modelName;
  private final int ttlSeconds;
  private final ScheduledExecutorService timer;
  private final AtomicLong beats = new AtomicLong();
  private final AtomicLong failures = new AtomicLong();
  private final AtomicReference<RefitCallException> lastFailure = new AtomicReference<>();
  private final AtomicBoolean closed = new AtomicBoolean();

  /**
   * Registers {@code workerId} and starts renewing it.
   *
   * @throws RefitCallException when the first registration is refused
   */
  public WorkerHeartbeat(
      RefitClient client, String workerId, WorkerRole role, String modelName, int ttlSeconds) {
    this.client = client;
    this.workerId = workerId;
    this.role = role;
    this.modelName = modelName;
    this.ttlSeconds = ttlSeconds;
    register();
    long periodMs = Math.max(100, ttlSeconds * 1000L / 3);
    this.timer =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "mx-rl-heartbeat-" + workerId);
              t.setDaemon(true);
              return t;
            });
    timer.scheduleWithFixedDelay(this::renew, periodMs, periodMs, TimeUnit.MILLISECONDS);
  }

  private WorkerRegistration register() {
    WorkerRegistration r = client.registerWorker(workerId, role, modelName, ttlSeconds);
    beats.incrementAndGet();
    return r;
  }

  private void renew() {
    try {
      register();
    } catch (RefitCallException e) {
      failures.incrementAndGet();
      lastFailure.set(e);
      LOG.warn("worker '{}': renewing its registration failed: {}", workerId, e.getMessage());
    }
  }

  public String workerId() {
    return workerId;
  }

  /** Successful registrations so far, the first included. */
  public long beats() {
    return beats.get();
  }

  /** Renewals that failed so far. */
  public long failures() {
    return failures.get();
  }

  /** The last renewal failure, or null. */
  public RefitCallException lastFailure() {
    return lastFailure.get();
  }

  /** Stops renewing (the registration then expires at its TTL); idempotent. */
  @Override
  public void close() {
    if (closed.compareAndSet(false, true)) {
      timer.shutdownNow();
      try {
        timer.awaitTermination(5, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
