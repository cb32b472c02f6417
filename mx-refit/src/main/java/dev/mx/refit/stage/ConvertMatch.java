package dev.mx.refit.stage;

import dev.mx.api.DType;
import dev.mx.api.annotation.Internal;
import dev.mx.api.plan.ConvertSource;
import dev.mx.api.plan.RecordedCopy;
import dev.mx.api.plan.SourceInfo;
import dev.mx.api.plan.TransferPlan;
import dev.mx.api.refit.Capture;
import dev.mx.api.refit.ParamSpec;
import dev.mx.refit.reslice.AsStrided;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Where each convert source's cast lands. Converts are planned in capture order, one per copy whose
 * source dtype differs from its destination dtype, so the k-th convert of a parameter matches its
 * k-th such copy; a convert matching no copy must cover its whole parameter. Shared by the cast
 * stage and the coverage gate so both agree on what a cast writes.
 */
@Internal
public final class ConvertMatch {

  /** The destination view and dtype of one convert. */
  public record Target(AsStrided view, DType dtype) {}

  private ConvertMatch() {}

  /** One target per {@code plan.converts()} entry, in order. */
  public static List<Target> match(
      Capture capture, Map<String, SourceInfo> sources, TransferPlan plan) {
    Map<String, Deque<RecordedCopy>> pending = new HashMap<>();
    for (RecordedCopy c : capture.result().copies()) {
      SourceInfo s = sources.get(c.srcName());
      if (s != null && s.dtype() != c.destDtype()) {
        pending.computeIfAbsent(c.paramName(), k -> new ArrayDeque<>()).add(c);
      }
    }
    List<Target> out = new ArrayList<>(plan.converts().size());
    for (ConvertSource cs : plan.converts()) {
      Deque<RecordedCopy> q = pending.get(cs.paramName());
      RecordedCopy c = q == null ? null : q.poll();
      ParamSpec spec = capture.paramLayout().get(cs.paramName());
      if (c != null && c.destShape().equals(cs.destShape())) {
        out.add(new Target(AsStrided.destinationOf(c), c.destDtype()));
      } else if (spec != null && spec.shape().numel() == cs.destShape().numel()) {
        out.add(new Target(AsStrided.contiguous(cs.destShape()), spec.dtype()));
      } else {
        throw new IllegalArgumentException(
            "convert into parameter '"
                + cs.paramName()
                + "' of shape "
                + cs.destShape()
                + " matches no captured copy and does not cover the whole parameter");
      }
    }
    return out;
  }
}
