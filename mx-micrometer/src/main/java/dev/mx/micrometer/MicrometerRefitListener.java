package dev.mx.micrometer;

import dev.mx.api.metrics.RefitListener;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Refits as Micrometer meters, tagged {@code rank} and {@code transport}:
 *
 * <ul>
 *   <li>{@value #REFIT} (timer, also tagged {@code outcome}: {@code installed} or {@code failed})
 *   <li>{@value #STAGE} (timer per {@code stage}, e.g. {@code wire_fused}, {@code install}: the
 *       receiver's stage names without their {@code _s}, since the unit is the timer's)
 *   <li>{@value #BYTES} and {@value #DESCRIPTORS} (counters of what installed refits read)
 *   <li>{@value #FAILURES} (counter of failed refits) and {@value #VERIFICATION_FAILURES} (counter
 *       of shards that did not verify, also tagged {@code peer})
 *   <li>{@value #VERIFIED_SHARDS} (counter)
 *   <li>{@value #INSTALLED_STEP} (gauge: the step the engine holds)
 *   <li>{@value #VERSION_WAIT} (timer, tagged {@code model}) and {@value #LEASES} (counter, tagged
 *       {@code model} and {@code action})
 *   <li>the trainer side: {@value #PUBLISH} (timer of a rank's whole publish of a step, tagged
 *       {@code model}, {@code slot} and the version's {@code state} then) and {@value
 *       #PUBLISH_STAGE} (timer per {@code stage}: {@code peers_wait}, {@code lease_wait}, {@code
 *       write}, {@code digest}, {@code slot})
 * </ul>
 *
 * Register it on a receiver ({@code Receiver.builder().listener(new
 * MicrometerRefitListener(registry))}).
 */
public final class MicrometerRefitListener implements RefitListener {
  public static final String REFIT = "mx.refit";
  public static final String STAGE = "mx.refit.stage";
  public static final String BYTES = "mx.refit.bytes";
  public static final String DESCRIPTORS = "mx.refit.descriptors";
  public static final String FAILURES = "mx.refit.failures";
  public static final String VERIFICATION_FAILURES = "mx.refit.verification.failures";
  public static final String VERIFIED_SHARDS = "mx.refit.verified.shards";
  public static final String INSTALLED_STEP = "mx.refit.installed.step";
  public static final String VERSION_WAIT = "mx.version.wait";
  public static final String LEASES = "mx.version.leases";
  public static final String PUBLISH = "mx.publish";
  public static final String PUBLISH_STAGE = "mx.publish.stage";

  private final MeterRegistry registry;

  /** The installed step per rank and transport: what the gauges read. */
  private final Map<Tags, AtomicLong> installedSteps = new ConcurrentHashMap<>();

  public MicrometerRefitListener(MeterRegistry registry) {
    this.registry = Objects.requireNonNull(registry, "registry");
  }

  private static Tags tags(Refit refit) {
    return Tags.of("rank", Integer.toString(refit.rank()), "transport", refit.transport());
  }

  @Override
  public void stageTimed(Refit refit, String stage, double seconds) {
    Timer.builder(STAGE)
        .description("time of one refit stage")
        .tags(tags(refit).and("stage", withoutUnit(stage)))
        .register(registry)
        .record(nanos(seconds));
  }

  /** {@code install} for the receiver's {@code install_s}: a tag value carries no unit. */
  static String withoutUnit(String stage) {
    return stage.endsWith("_s") ? stage.substring(0, stage.length() - 2) : stage;
  }

  @Override
  public void shardsVerified(Refit refit, long verified, long unverifiable) {
    Counter.builder(VERIFIED_SHARDS)
        .description("shards whose digest matched")
        .tags(tags(refit))
        .register(registry)
        .increment(verified);
  }

  @Override
  public void verificationFailed(Refit refit, String source, String peer, String detail) {
    Counter.builder(VERIFICATION_FAILURES)
        .description("shards that did not verify (nothing of the step was installed)")
        .tags(tags(refit).and("peer", peer == null ? "unknown" : peer))
        .register(registry)
        .increment();
  }

  @Override
  public void installed(Refit refit) {
    Tags t = tags(refit);
    AtomicLong step =
        installedSteps.computeIfAbsent(
            t,
            k -> {
              AtomicLong v = new AtomicLong(-1);
              Gauge.builder(INSTALLED_STEP, v, AtomicLong::doubleValue)
                  .description("the step the engine holds (-1 before the first install)")
                  .tags(k)
                  .register(registry);
              return v;
            });
    step.set(refit.step());
  }

  @Override
  public void refitFinished(Refit refit, Outcome outcome) {
    Tags t = tags(refit);
    Timer.builder(REFIT)
        .description("one refit, from its start to install or failure")
        .tags(t.and("outcome", outcome.label()))
        .register(registry)
        .record(nanos(outcome.seconds()));
    if (outcome.installed()) {
      Counter.builder(BYTES)
          .description("bytes read from the peers by installed refits")
          .baseUnit("bytes")
          .tags(t)
          .register(registry)
          .increment(outcome.bytes());
      Counter.builder(DESCRIPTORS)
          .description("read descriptors issued by installed refits")
          .tags(t)
          .register(registry)
          .increment(outcome.descriptors());
    } else {
      Counter.builder(FAILURES)
          .description("refits that failed")
          .tags(t)
          .register(registry)
          .increment();
    }
  }

  @Override
  public void versionWaited(String model, long step, double seconds) {
    Timer.builder(VERSION_WAIT)
        .description("wait for a readable weight version")
        .tags("model", model)
        .register(registry)
        .record(nanos(seconds));
  }

  @Override
  public void lease(String model, String versionId, String holder, LeaseAction action) {
    Counter.builder(LEASES)
        .description("version lease changes")
        .tags("model", model, "action", action.name().toLowerCase(Locale.ROOT))
        .register(registry)
        .increment();
  }

  private static Duration nanos(double seconds) {
    return Duration.ofNanos(Math.max(0, Math.round(seconds * 1e9)));
  }

  @Override
  public void publishStageTimed(Publish publish, String stage, double seconds) {
    Timer.builder(PUBLISH_STAGE)
        .description("time of one stage of a trainer rank's publish of a step")
        .tags("model", publish.model(), "slot", publish.slot(), "stage", withoutUnit(stage))
        .register(registry)
        .record(nanos(seconds));
  }

  @Override
  public void published(Publish publish, double seconds, String state) {
    Timer.builder(PUBLISH)
        .description("a trainer rank's publish of a step, from its start to its slot in the store")
        .tags("model", publish.model(), "slot", publish.slot(), "state", state)
        .register(registry)
        .record(nanos(seconds));
  }
}
