package dev.mx.refit.stage;

import dev.mx.api.annotation.Internal;
import dev.mx.api.error.IncompleteRefitException;
import dev.mx.api.error.TransportException;
import dev.mx.api.error.UnsupportedReshardException;
import dev.mx.api.error.UnverifiableShardException;
import dev.mx.api.plan.RecordedCopy;
import dev.mx.api.plan.TransferPlan;
import dev.mx.api.refit.Capture;
import dev.mx.api.transport.Transport;
import dev.mx.plan.ReshardPlanner;
import dev.mx.plan.UnsupportedCause;
import dev.mx.refit.Coverage;
import dev.mx.refit.VerifyMode;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * The plan gates of prepare, each run before any byte moves: no fallback source, strict
 * completeness, a digest for every staged shard when every byte is to be verified; and connecting
 * the peers the plan reads.
 */
@Internal
public final class PlanGates {
  private PlanGates() {}

  /**
   * Fails closed on any source the planner could not plan (no unimplemented fallback path serves
   * stale weights).
   */
  public static void rejectFallback(TransferPlan plan, Capture capture) {
    if (plan.fallback().isEmpty()) {
      return;
    }
    Map<String, String> reasons = new LinkedHashMap<>();
    for (String name : plan.fallback()) {
      String r = plan.fallbackReasons().get(name);
      if (r == null) {
        r = capture.result().unsupportedReasons().get(name);
      }
      if (r != null) {
        reasons.put(name, r);
      }
    }
    Set<String> fallback = new LinkedHashSet<>(plan.fallback());
    Set<String> params = new TreeSet<>();
    for (RecordedCopy c : capture.result().copies()) {
      if (fallback.contains(c.srcName())) {
        params.add(c.paramName());
      }
    }
    List<String> names = plan.fallback().subList(0, Math.min(10, plan.fallback().size()));
    throw new UnsupportedReshardException(
        null,
        plan.fallback().size()
            + " source(s) "
            + names
            + " cannot be planned and would need the unimplemented fallback path; refusing to serve stale weights."
            + " Causes: "
            + describeCauses(reasons)
            + ". Params: "
            + new ArrayList<>(params).subList(0, Math.min(10, params.size())));
  }

  private static String describeCauses(Map<String, String> reasons) {
    List<UnsupportedCause> causes = ReshardPlanner.summarizeUnsupported(reasons, 3);
    if (causes.isEmpty()) {
      return ReshardPlanner.CAUSE_NOT_RECORDED;
    }
    StringBuilder sb = new StringBuilder();
    for (UnsupportedCause c : causes) {
      sb.append(sb.isEmpty() ? "" : "; ").append(c);
    }
    return sb.toString();
  }

  /** Strict staged verification also requires every parameter written and every copy attributed. */
  public static void requireComplete(Capture capture, Coverage coverage) {
    if (capture.result().unattributed() > 0) {
      throw new IncompleteRefitException(
          capture.result().unattributed()
              + " captured copy/copies wrote no known parameter (unattributed); strict verification refuses an"
              + " incomplete refit",
          List.of());
    }
    if (!coverage.missing().isEmpty()) {
      List<String> sample = coverage.missing().subList(0, Math.min(5, coverage.missing().size()));
      throw new IncompleteRefitException(
          coverage.missing().size()
              + " parameter(s) would never be written, e.g. "
              + sample
              + "; strict verification refuses an incomplete refit",
          sample);
    }
  }

  /**
   * With every byte verified (all, strict), a staged shard without digest fails before any byte
   * moves.
   */
  public static void requireStagedDigests(VerifyMode mode, ShardStaging.Result staging) {
    if (mode != VerifyMode.ALL && mode != VerifyMode.STRICT) {
      return;
    }
    for (ShardStaging.Staged s : staging.staged()) {
      if (s.expectedDigest() == null) {
        throw new UnverifiableShardException(
            s.source(),
            s.shard().shardOffset(),
            s.shard().session(),
            "the publisher did not publish a verification digest for it; the default verification"
                + " (mx.receiver.verify=all) verifies every installed byte. Publish digests, or opt out explicitly"
                + " with --verify whole-shards or --verify off (mx.receiver.verify=whole-shards|off)");
      }
    }
  }

  /**
   * Connects every peer the plan reads that is not connected yet, from the discovered peer
   * metadata.
   */
  public static void connectPeers(
      Transport transport, TransferPlan plan, Map<String, byte[]> peerMetadata) {
    List<String> missing = new ArrayList<>();
    for (String session : plan.sessions()) {
      if (transport.isConnected(session)) {
        continue;
      }
      byte[] meta = peerMetadata.get(session);
      if (meta == null) {
        missing.add(session);
      } else {
        transport.connect(session, meta);
      }
    }
    if (!missing.isEmpty()) {
      throw new TransportException(
          missing.get(0),
          "the plan reads from "
              + missing.size()
              + " session(s) with no peer metadata to connect: "
              + missing.subList(0, Math.min(10, missing.size())));
    }
  }
}
