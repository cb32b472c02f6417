/**
 * Provider discovery: the {@link dev.mx.api.spi.MxProvider} contract every backend implements and
 * the {@link dev.mx.api.spi.ProviderRegistry} that finds providers with {@link
 * java.util.ServiceLoader}, orders them by priority and honours an override by name.
 */
package dev.mx.api.spi;
