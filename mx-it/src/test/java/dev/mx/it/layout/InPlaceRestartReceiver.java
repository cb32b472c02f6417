package dev.mx.it.layout;

import dev.mx.api.DType;
import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.api.transport.TransportProvider;
import dev.mx.layout.model.ModelConfigs;
import dev.mx.layout.vllm.InferenceTopology;
import dev.mx.layout.vllm.VllmReference;
import dev.mx.metadata.MetadataStores;
import dev.mx.refit.LiveWeights;
import dev.mx.refit.version.VersionFollower;
import dev.mx.testing.ForwardingTransport;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A receiver JVM for {@link VersionFaultsAcrossProcessesTest}: inference rank 0 of tp=1 writing its
 * live weights in place, following the versions of {@code args[1]} on store {@code args[0]} over
 * transport {@code args[2]} with lease TTL {@code args[3]} ms, leasing as {@code receiver-0}.
 *
 * <p>Mode {@code args[4]}: {@code die} prints {@code @part-way} once the first landing batch of its
 * first version has overwritten live memory (the install is part-way) and waits to be killed;
 * {@code complete} installs the newest version and prints {@code @installed step-N mismatches=K}
 * after comparing every live parameter with the generator's reference.
 */
public final class InPlaceRestartReceiver {
  private InPlaceRestartReceiver() {}

  public static void main(String[] args) throws Exception {
    boolean die = args[4].equals("die");
    TransportProvider provider = TransportProvider.registry().select(args[2]);
    try (MetadataStore store = MetadataStores.open(args[0]);
        Transport real =
            provider.create(new TransportConfig("receiver-0", Duration.ofSeconds(30), Map.of()));
        LiveWeights live = new LiveWeights(VersionJvms.inferenceTp1().params())) {
      Transport t = die ? new HaltAfterFirstRead(real, live) : real;
      live.registerWith(t);
      VersionFollower f =
          VersionJvms.inPlaceFollower(store, args[1], t, live, Duration.ofSeconds(30))
              .leaseTtl(Duration.ofMillis(Long.parseLong(args[3])))
              .build();
      long step = f.next(Duration.ofSeconds(120)).step();
      VllmReference reference =
          new VllmReference(ModelConfigs.load(VersionJvms.MODEL), InferenceTopology.tp(1), 0);
      List<String> mismatches = new ArrayList<>();
      for (String name : live.layout().keySet()) {
        mismatches.addAll(
            reference.mismatches(name, live.parameter(name), step, DType.F32, DType.F32, 3));
      }
      System.out.println(
          "@installed step-" + step + " torn=" + live.isTorn() + " mismatches=" + mismatches);
      System.out.flush();
      f.close();
    }
  }

  /**
   * Test double around a real transport: after its first read has landed bytes in the live weights
   * it prints {@code @part-way} and blocks until the JVM is killed.
   */
  private static final class HaltAfterFirstRead extends ForwardingTransport {
    private final LiveWeights live;

    HaltAfterFirstRead(Transport delegate, LiveWeights live) {
      super(delegate);
      this.live = live;
    }

    @Override
    public void read(List<ReadDescriptor> batch, Duration timeout) {
      delegate.read(batch, timeout);
      if (!VersionJvms.landsIn(live, batch)) {
        return; // the receiver's probe, before it writes the live weights
      }
      System.out.println("@part-way");
      System.out.flush();
      try {
        Thread.sleep(Long.MAX_VALUE); // the test SIGKILLs this JVM here
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
