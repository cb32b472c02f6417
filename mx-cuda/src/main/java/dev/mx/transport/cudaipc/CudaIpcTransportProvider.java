package dev.mx.transport.cudaipc;

import dev.mx.api.annotation.Stable;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.api.transport.TransportProvider;
import dev.mx.cuda.Cuda;

/**
 * {@code cuda-ipc}: device memory across processes of one host. Available where CUDA is; ranked
 * below ucx (8) because it reaches only this host, above mem. Option {@code cuda.device} (default
 * 0) picks the device whose stream runs the copies.
 */
@Stable
public final class CudaIpcTransportProvider extends TransportProvider {

  @Override
  public String name() {
    return CudaIpcTransport.NAME;
  }

  @Override
  public boolean isAvailable() {
    return Cuda.isAvailable();
  }

  @Override
  public Throwable unavailabilityCause() {
    return Cuda.unavailabilityCause();
  }

  @Override
  public int priority() {
    return 6;
  }

  @Override
  public String artifact() {
    return "dev.mx:mx-cuda";
  }

  @Override
  public Transport create(TransportConfig config) {
    Cuda.ensureAvailability();
    return new CudaIpcTransport(config);
  }
}
