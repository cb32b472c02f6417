package dev.mx.cli.demo;

import dev.mx.api.transport.TransportProvider;
import dev.mx.layout.model.ModelConfigs;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

/**
 * The valid values help texts list ({@code ${COMPLETION-CANDIDATES}}), from the same sources the
 * checks use.
 */
final class Candidates {
  private Candidates() {}

  /** The bundled model names. */
  static final class Models implements Iterable<String> {
    @Override
    public Iterator<String> iterator() {
      return ModelConfigs.BUNDLED.iterator();
    }
  }

  /** The dtypes the generator writes. */
  static final class Dtypes implements Iterable<String> {
    @Override
    public Iterator<String> iterator() {
      return OptionChecks.DTYPES.iterator();
    }
  }

  /** The dtypes trainers may publish: the generator's and the quantized-source formats. */
  static final class TrainerDtypes implements Iterable<String> {
    @Override
    public Iterator<String> iterator() {
      return OptionChecks.TRAINER_DTYPES.iterator();
    }
  }

  /** The dtypes inference parameters may have: the generator's, the fp8 casts and fp8-block. */
  static final class InferenceDtypes implements Iterable<String> {
    @Override
    public Iterator<String> iterator() {
      return OptionChecks.INFERENCE_DTYPES.iterator();
    }
  }

  /** {@code auto} and every transport on the class path. */
  static final class Transports implements Iterable<String> {
    @Override
    public Iterator<String> iterator() {
      List<String> names = new ArrayList<>(List.of("auto"));
      TransportProvider.registry().providers().forEach(p -> names.add(p.name()));
      return names.iterator();
    }
  }
}
