package dev.mx.cli.demo;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;

/** The resolved choices of a run. */
record DemoPlan(
    Map<String, Integer> trainer,
    Map<String, Integer> inference,
    String transport,
    boolean inProcess,
    int receivers,
    String model,
    String trainerDtype,
    String inferenceDtype,
    String wire,
    String verify,
    int steps,
    double timeoutSeconds,
    boolean verbose,
    dev.mx.api.transport.MemoryKind device,
    double stallLimitSeconds,
    String install,
    int trainerBuffers,
    long stagingBytes) {

  /** Whether a rank that installed a step in place can be put back when another rank failed it. */
  boolean restorable() {
    return install.equals("in-place") && trainerBuffers == 2 && !device.isDevice();
  }

  WorkerSpec base(String metadataUri) {
    return new WorkerSpec(
            "trainer",
            0,
            model,
            trainer,
            inference,
            transport,
            metadataUri,
            "mx-demo-" + UUID.randomUUID().toString().substring(0, 8),
            trainerDtype,
            inferenceDtype,
            wire,
            verify,
            timeoutSeconds,
            1.0)
        .withDevice(device)
        .withStallLimit(stallLimitSeconds)
        .withMemory(install, trainerBuffers, stagingBytes);
  }

  Map<String, Object> runFields() {
    Map<String, Object> run = new LinkedHashMap<>();
    run.put("model", model);
    Map<String, Integer> t = new LinkedHashMap<>();
    if (trainer.getOrDefault("fsdp", 1) > 1) {
      t.put("fsdp", trainer.get("fsdp"));
    } else {
      t.put("tp", trainer.get("tp"));
      t.put("pp", trainer.get("pp"));
      t.put("ep", trainer.get("ep"));
      if (trainer.getOrDefault("dp", 1) > 1) {
        t.put("dp", trainer.get("dp"));
      }
      for (String k : Topology.STATED_ONLY) {
        if (trainer.containsKey(k)) {
          t.put(k, trainer.get(k));
        }
      }
    }
    run.put("trainer", t);
    run.put("inference", inference);
    run.put("steps", steps);
    run.put("last_step", -1);
    run.put("trainer_dtype", trainerDtype);
    run.put("inference_dtype", inferenceDtype);
    run.put("transport", transport);
    run.put("wire", wire);
    run.put("verify", verify);
    run.put("install", install);
    run.put("trainer_buffers", trainerBuffers);
    run.put("device", device.toString());
    return run;
  }
}
