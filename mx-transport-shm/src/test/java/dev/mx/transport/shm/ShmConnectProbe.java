package dev.mx.transport.shm;

import dev.mx.api.error.TransportException;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;

/**
 * Tries to connect to the shm peer whose metadata (base64) is in file {@code args[0]} under session
 * {@code args[1]}; prints {@code connected} or {@code refused: MESSAGE}. Run as another user by
 * permission tests.
 */
public final class ShmConnectProbe {
  private ShmConnectProbe() {}

  public static void main(String[] args) throws Exception {
    byte[] meta = Base64.getDecoder().decode(Files.readString(Path.of(args[0])).trim());
    try (Transport t = new ShmTransportProvider().create(TransportConfig.of("intruder"))) {
      t.connect(args[1], meta);
      System.out.println("connected");
    } catch (TransportException e) {
      System.out.println("refused: " + e.getMessage());
    }
  }
}
