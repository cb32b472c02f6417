package dev.mx.refit.jfr;

import dev.mx.api.annotation.Internal;
import dev.mx.api.metrics.RefitListener;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;

/**
 * The built-in listener that turns refits into JFR events (registered through {@code
 * META-INF/services}, so every receiver has it). Each call first asks whether its event type is
 * enabled, so with no recording running a refit pays a few flag checks and allocates nothing past
 * them.
 */
@Internal
public final class JfrRefitListener implements RefitListener {

  /**
   * The running refit events of this thread: a refit starts and finishes on the thread that called
   * {@code updateWeights}.
   */
  private static final ThreadLocal<Map<Refit, RefitEvent>> RUNNING =
      ThreadLocal.withInitial(HashMap::new);

  @Override
  public void refitStarted(Refit refit) {
    RefitEvent e = new RefitEvent();
    if (!e.isEnabled()) {
      return;
    }
    e.rank = refit.rank();
    e.step = refit.step();
    e.transport = refit.transport();
    RUNNING.get().put(refit, e);
    e.begin();
  }

  @Override
  public void stageTimed(Refit refit, String stage, double seconds) {
    if (StageClock.timesAtSite(stage)) {
      return; // committed where it ran, with its real start
    }
    // A stage mx does not time itself (a custom wire policy's): known only by its duration now.
    RefitStageEvent e = new RefitStageEvent();
    if (!e.isEnabled()) {
      return;
    }
    e.rank = refit.rank();
    e.step = refit.step();
    e.stage = stage;
    e.stageTime = Math.round(seconds * 1e9);
    e.commit();
  }

  @Override
  public void verificationFailed(Refit refit, String source, String peer, String detail) {
    VerificationFailureEvent e = new VerificationFailureEvent();
    if (!e.isEnabled()) {
      return;
    }
    e.rank = refit.rank();
    e.step = refit.step();
    e.source = source;
    e.peer = peer;
    e.detail = detail;
    e.commit();
  }

  @Override
  public void refitFinished(Refit refit, Outcome outcome) {
    Map<Refit, RefitEvent> running = RUNNING.get();
    RefitEvent e = running.remove(refit);
    if (running.isEmpty()) {
      RUNNING.remove();
    }
    if (e == null) {
      return; // no recording wanted it when the refit started
    }
    e.end();
    if (e.shouldCommit()) {
      e.bytes = outcome.bytes();
      e.descriptors = outcome.descriptors();
      e.outcome = outcome.label();
      e.failure = outcome.failure();
      e.commit();
    }
  }

  @Override
  public void versionWaited(String model, long step, double seconds) {
    VersionWaitEvent e = new VersionWaitEvent();
    if (!e.isEnabled()) {
      return;
    }
    e.model = model;
    e.step = step;
    e.waited = Math.round(seconds * 1e9);
    e.commit();
  }

  @Override
  public void lease(String model, String versionId, String holder, LeaseAction action) {
    LeaseEvent e = new LeaseEvent();
    if (!e.isEnabled()) {
      return;
    }
    e.model = model;
    e.versionId = versionId;
    e.holder = holder;
    e.action = action.name().toLowerCase(Locale.ROOT);
    e.commit();
  }

  @Override
  public void publishStageTimed(Publish publish, String stage, double seconds) {
    PublishStageEvent e = new PublishStageEvent();
    if (!e.isEnabled()) {
      return;
    }
    e.model = publish.model();
    e.slot = publish.slot();
    e.step = publish.step();
    e.stage = stage;
    e.stageTime = Math.round(seconds * 1e9);
    e.commit();
  }

  @Override
  public void published(Publish publish, double seconds, String state) {
    PublishEvent e = new PublishEvent();
    if (!e.isEnabled()) {
      return;
    }
    e.model = publish.model();
    e.slot = publish.slot();
    e.step = publish.step();
    e.state = state;
    e.publishTime = Math.round(seconds * 1e9);
    e.commit();
  }
}
