package dev.mx.transport.ucx;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import org.openucx.jucx.UcxException;
import org.openucx.jucx.ucp.UcpWorker;
import org.openucx.jucx.ucs.UcsConstants;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Owns access to one UCX worker: every jucx call on the worker, its endpoints and keys runs under
 * {@link #lock()}, so batches may come from several threads. A daemon thread progresses the worker
 * while no caller does, because peers' GETs are served by this side's progress on transports that
 * emulate them (shared memory and TCP); once nothing has happened for {@link #SPIN_NANOS} it sleeps
 * on the worker's event fd.
 */
final class UcxWorkerLoop {
  private static final Logger LOG = LoggerFactory.getLogger(UcxWorkerLoop.class);

  /**
   * How long the background thread sleeps on the event fd at most (a missed wake-up costs no more).
   */
  private static final int IDLE_WAIT_MILLIS = 50;

  /**
   * How long a progressing thread keeps polling after the last event before it sleeps: within a
   * transfer the next event is microseconds away, and a sleep would cost an arm, a poll and a
   * wake-up each time.
   */
  static final long SPIN_NANOS = 200_000;

  private final UcpWorker worker;
  private final int eventFd;
  private final String name;
  private final ReentrantLock lock;
  private final AtomicInteger activeCallers = new AtomicInteger();
  private final Thread thread;
  private volatile boolean running = true;

  /** Set (under the lock) once the worker is destroyed: nothing may touch it afterwards. */
  private boolean destroyed;

  /**
   * Starts progressing {@code worker} of endpoint {@code name}; {@code lock} is the worker lock,
   * handed in so that what registers memory before the loop starts can share it.
   */
  UcxWorkerLoop(UcpWorker worker, String name, ReentrantLock lock) {
    this.worker = worker;
    this.name = name;
    this.lock = lock;
    this.eventFd = worker.getEventFD();
    this.thread = Thread.ofPlatform().daemon().name("mx-ucx-progress-" + name).unstarted(this::run);
    thread.start();
  }

  ReentrantLock lock() {
    return lock;
  }

  /** One progress call; the caller holds the lock. Returns whether anything happened. */
  boolean progressLocked() {
    if (destroyed) {
      return false;
    }
    try {
      return worker.progress() != 0;
    } catch (Exception e) {
      throw new IllegalStateException("UCX worker progress failed on endpoint '" + name + "'", e);
    }
  }

  /**
   * Progresses until an idle call (at most {@code maxRounds} calls); returns whether anything
   * happened.
   */
  boolean progress(int maxRounds) {
    lock.lock();
    try {
      boolean any = false;
      for (int i = 0; i < maxRounds && progressLocked(); i++) {
        any = true;
      }
      return any;
    } finally {
      lock.unlock();
    }
  }

  /**
   * Sleeps until the worker has an event or {@code timeout} passes, returning at once when there is
   * work. Arms the worker under the lock and polls its fd without it.
   */
  void waitForEvents(Duration timeout) {
    lock.lock();
    try {
      if (destroyed || progressLocked()) {
        return;
      }
      worker.arm();
    } catch (UcxException e) {
      if (e.getStatus() == UcsConstants.STATUS.UCS_ERR_BUSY) {
        return; // events arrived between progress and arm: go progress them
      }
      throw e;
    } finally {
      lock.unlock();
    }
    int millis = Math.clamp(timeout.toMillis(), 1, Integer.MAX_VALUE);
    UcxEventWait.await(eventFd, millis);
  }

  /**
   * A caller that progresses the worker itself while it waits; the background thread stands aside
   * meanwhile.
   */
  void enterCaller() {
    activeCallers.incrementAndGet();
  }

  void exitCaller() {
    activeCallers.decrementAndGet();
  }

  private void run() {
    long idleSince = -1;
    while (running) {
      try {
        if (activeCallers.get() > 0) {
          LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
          idleSince = -1;
          continue;
        }
        if (progress(64)) {
          idleSince = -1;
          continue;
        }
        long now = System.nanoTime();
        if (idleSince < 0) {
          idleSince = now;
        }
        if (now - idleSince < SPIN_NANOS) {
          Thread.onSpinWait();
        } else {
          waitForEvents(Duration.ofMillis(IDLE_WAIT_MILLIS));
          idleSince = -1;
        }
      } catch (RuntimeException e) {
        if (running) {
          LOG.warn("ucx progress thread of endpoint '{}' hit {}; continuing", name, e.toString());
          LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10));
        }
      }
    }
  }

  /** Records that the worker was destroyed; the caller holds the lock. */
  void markDestroyed() {
    destroyed = true;
  }

  /** Stops the background thread (before the worker is destroyed); returns whether it stopped. */
  boolean stop() {
    running = false;
    worker.signal();
    try {
      thread.join(TimeUnit.SECONDS.toMillis(10));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (thread.isAlive()) {
      LOG.warn("ucx progress thread of endpoint '{}' did not stop within 10 s", name);
      return false;
    }
    return true;
  }
}
