package dev.mx.refit;

import dev.mx.api.annotation.Stable;
import dev.mx.api.plan.BoundingMode;
import dev.mx.api.plan.PlanBuilder;
import dev.mx.api.plan.PlanBuilderProvider;
import dev.mx.api.spi.ProviderRegistry;
import dev.mx.api.transport.Transport;
import dev.mx.api.util.Settings;
import dev.mx.plan.PlanOptions;
import dev.mx.plan.ReshardPlanner;
import dev.mx.refit.cast.Fp8Rounding;
import dev.mx.refit.stage.RefitReport;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Everything a receiver is configured with, concluded once before it is built (the way Aeron's
 * {@code MediaDriver.Context.conclude()} fills defaults and checks keys against each other before
 * anything starts): the {@link ReceiverConfig} and every other {@link ReceiverSetting}, typed and
 * defaulted, with the checks across keys done here. Nothing below it reads system properties or the
 * environment: a setting changed after a receiver was built takes effect in the next receiver.
 *
 * <p>Checked here: a writer of live weights in place does not double buffer; a set landing batch is
 * not larger than a set staging budget; strict verification (which plans staged) is not asked for
 * ModelExpress bounding; the coverage floor lies in [0, 1] when the gate is on. The staging budget
 * against the largest staged unit is checked where that unit is known, at prepare ({@link
 * dev.mx.refit.stage.StagingWaves#cut}).
 */
@Stable
public final class ReceiverContext {
  private static final Logger LOG = LoggerFactory.getLogger(ReceiverContext.class);

  private final ReceiverConfig config;
  private final Settings planSettings;
  private final boolean inPlace;
  private final OptionalLong stagingBytes;
  private final long landingBytes;
  private final boolean landingDigestOnWire;
  private final int maxSegmentsPerCopy;
  private final boolean batchInstall;
  private final boolean cacheDescriptors;
  private final boolean pipeline;
  private final boolean requireFullCoverage;
  private final double coverageFloor;
  private final boolean stageRecord;
  private final RefitRecords.Level stageRecordLevel;
  private final double maxGbps;
  private final Fp8Rounding fp8Rounding;

  private ReceiverContext(
      ReceiverConfig config, SettingValues.Lookup in, Settings settings, boolean inPlace) {
    this.config = Objects.requireNonNull(config, "config");
    this.planSettings = settings;
    this.inPlace = inPlace;
    this.stagingBytes =
        config.stagingBytes().isPresent() ? config.stagingBytes() : SettingValues.stagingBytes(in);
    OptionalLong landing =
        config.landingBytes().isPresent() ? config.landingBytes() : SettingValues.landingBytes(in);
    this.landingBytes =
        landing.orElse(
            SettingValues.bytes(
                ReceiverSetting.LANDING_BYTES,
                ReceiverSetting.LANDING_BYTES.defaultValue(),
                0,
                ""));
    this.landingDigestOnWire = SettingValues.landingDigestOnWire(in);
    this.maxSegmentsPerCopy = SettingValues.integer(ReceiverSetting.MAX_SEGMENTS_PER_COPY, in);
    this.batchInstall = SettingValues.bool(ReceiverSetting.BATCH_INSTALL, in);
    this.cacheDescriptors = SettingValues.bool(ReceiverSetting.CACHE_DESCRIPTORS, in);
    this.pipeline = SettingValues.bool(ReceiverSetting.PIPELINE, in);
    this.requireFullCoverage = SettingValues.bool(ReceiverSetting.REQUIRE_FULL_COVERAGE, in);
    this.coverageFloor = SettingValues.number(ReceiverSetting.COVERAGE_FLOOR, in);
    this.stageRecord = SettingValues.bool(ReceiverSetting.STAGE_RECORD, in);
    this.stageRecordLevel =
        RefitReport.stageLevel(SettingValues.string(ReceiverSetting.STAGE_RECORD_LEVEL, in));
    this.maxGbps = ceiling(SettingValues.number(ReceiverSetting.MAX_GBPS, in));
    this.fp8Rounding = SettingValues.fp8Rounding(in);
    crossCheck(landing);
  }

  /**
   * Concludes {@code config} with the other receiver settings as {@code settings} holds them.
   *
   * @param inPlace whether the receiver writes the engine's live weights in place
   * @throws IllegalArgumentException naming the setting (or the two settings) at fault
   */
  public static ReceiverContext conclude(
      ReceiverConfig config, Settings settings, boolean inPlace) {
    Objects.requireNonNull(settings, "settings");
    return new ReceiverContext(config, SettingValues.lookup(Map.of(), settings), settings, inPlace);
  }

  /** {@link #conclude} over the system properties and the process environment. */
  public static ReceiverContext conclude(ReceiverConfig config, boolean inPlace) {
    return conclude(config, Settings.system(), inPlace);
  }

  /**
   * A context from a property map holding any {@link ReceiverSetting} by its property name (the map
   * wins over {@code settings}); an unknown key fails naming the closest known one.
   *
   * @throws IllegalArgumentException naming a bad key (with the closest known key) or value
   */
  public static ReceiverContext fromProperties(
      Map<String, String> properties, Settings settings, boolean inPlace) {
    for (String key : properties.keySet()) {
      if (ReceiverSetting.byProperty(key) == null) {
        throw new IllegalArgumentException(
            "unknown receiver setting '"
                + key
                + "'"
                + ReceiverSetting.suggestion(key, ReceiverSetting.properties())
                + "; known settings: "
                + String.join(", ", ReceiverSetting.properties()));
      }
    }
    SettingValues.Lookup in = SettingValues.lookup(properties, settings);
    Map<String, String> receiverKeys = new LinkedHashMap<>(properties);
    receiverKeys.keySet().removeIf(k -> !ReceiverConfig.KEYS.contains(k));
    // An unset wire follows the fused-wire flag, which the map may hold too.
    receiverKeys.putIfAbsent(
        ReceiverConfig.WIRE,
        SettingValues.bool(ReceiverSetting.FUSED_WIRE, in)
            ? ReceiverConfig.FUSED
            : ReceiverConfig.PHASED);
    return new ReceiverContext(
        ReceiverConfig.fromProperties(receiverKeys, settings), in, settings, inPlace);
  }

  /**
   * The staging budget {@code settings} sets ({@code mx.receiver.staging-bytes} / {@code
   * MX_RECEIVER_STAGING_BYTES}), or empty for {@code auto}: for sizing a reservation before any
   * receiver exists, without concluding (and checking) the other settings.
   *
   * @throws IllegalArgumentException naming the setting when it is not a positive byte count
   */
  public static OptionalLong stagingBytes(Settings settings) {
    return SettingValues.stagingBytes(SettingValues.lookup(Map.of(), settings));
  }

  /**
   * The fp8 rounding mode {@code settings} sets ({@code mx.refit.fp8-rounding} / {@code
   * MX_REFIT_FP8_ROUNDING}, default {@code vllm}): for building a quantizing installer beside a
   * receiver, without concluding the other settings.
   *
   * @throws IllegalArgumentException naming the setting and the value when it names no mode
   */
  public static Fp8Rounding fp8Rounding(Settings settings) {
    return SettingValues.fp8Rounding(SettingValues.lookup(Map.of(), settings));
  }

  private void crossCheck(OptionalLong landing) {
    if (inPlace && config.doubleBuffer()) {
      throw new IllegalArgumentException(
          "a receiver writing live weights in place cannot also double buffer ("
              + ReceiverConfig.DOUBLE_BUFFER
              + "): choose one");
    }
    if (stagingBytes.isPresent()
        && landing.isPresent()
        && landing.getAsLong() > stagingBytes.getAsLong()) {
      throw new IllegalArgumentException(
          ReceiverConfig.LANDING_BYTES
              + "="
              + landing.getAsLong()
              + " is larger than "
              + ReceiverConfig.STAGING_BYTES
              + "="
              + stagingBytes.getAsLong()
              + ": a staged wave would land in one batch and the landing size would not apply;"
              + " lower the landing batch or raise the staging budget");
    }
    if (requireFullCoverage && !(coverageFloor >= 0 && coverageFloor <= 1)) {
      throw new IllegalArgumentException(
          ReceiverSetting.COVERAGE_FLOOR.env() + "=" + coverageFloor + " must lie in [0, 1]");
    }
  }

  /** A ceiling that is not finite turns the check off (with a warning); a negative one too. */
  private static double ceiling(double c) {
    if (!Double.isFinite(c)) {
      LOG.warn(
          "ignoring {}={}: not a finite number; the throughput ceiling is off",
          ReceiverSetting.MAX_GBPS.env(),
          c);
      return 0;
    }
    return Math.max(0, c);
  }

  public ReceiverConfig config() {
    return config;
  }

  /** Whether the receiver writes the engine's live weights in place. */
  public boolean inPlace() {
    return inPlace;
  }

  /** The staging budget set, or empty for {@code auto} (64 MiB, or what the largest unit needs). */
  public OptionalLong stagingBytes() {
    return stagingBytes;
  }

  /** Bytes per landing batch; 0: one batch per peer. */
  public long landingBytes() {
    return landingBytes;
  }

  /** Whether bytes a DMA transport landed are digested on the wire thread, not a worker. */
  public boolean landingDigestOnWire() {
    return landingDigestOnWire;
  }

  public int maxSegmentsPerCopy() {
    return maxSegmentsPerCopy;
  }

  public boolean batchInstall() {
    return batchInstall;
  }

  public boolean cacheDescriptors() {
    return cacheDescriptors;
  }

  public boolean pipeline() {
    return pipeline;
  }

  public boolean requireFullCoverage() {
    return requireFullCoverage;
  }

  public double coverageFloor() {
    return coverageFloor;
  }

  public boolean stageRecord() {
    return stageRecord;
  }

  public RefitRecords.Level stageRecordLevel() {
    return stageRecordLevel;
  }

  /** The throughput ceiling in Gbps; 0: off. */
  public double maxGbps() {
    return maxGbps;
  }

  /** How quantizing installs compute each block's factor ({@link ReceiverSetting#FP8_ROUNDING}). */
  public Fp8Rounding fp8Rounding() {
    return fp8Rounding;
  }

  /**
   * The best planner on the class path ({@code -Dmx.planner=NAME} or {@code MX_PLANNER} chooses one
   * by name).
   */
  public PlanBuilder classPathPlanner() {
    return ProviderRegistry.load(
            PlanBuilderProvider.class, "planner", "mx.planner", "MX_PLANNER", planSettings)
        .select()
        .create();
  }

  /** The default planner: a {@link ReshardPlanner} over the {@code mx.plan.*} settings. */
  public PlanBuilder defaultPlanner() {
    return new ReshardPlanner(planSettings);
  }

  /**
   * The shard-bounding plan options for {@code transport}: its declared costs with the {@code
   * mx.plan.*} settings applied, and this context's descriptor threshold.
   */
  public PlanOptions planOptions(Transport transport) {
    return PlanOptions.forTransport(BoundingMode.SHARD, planSettings, transport)
        .withMaxSegmentsPerCopy(maxSegmentsPerCopy);
  }

  @Override
  public String toString() {
    return "ReceiverContext["
        + config
        + ", staging "
        + stagingBytes
        + ", landing "
        + landingBytes
        + (landingDigestOnWire ? " digested on the wire" : "")
        + ", inPlace "
        + inPlace
        + "]";
  }
}
