/**
 * Java Flight Recorder events of refits, named under {@code dev.mx}: {@code dev.mx.Refit} (one per
 * refit, its duration the refit's), {@code dev.mx.RefitStage} (one per timed stage, recorded where
 * and when it ran: {@link dev.mx.refit.jfr.StageClock}), {@code dev.mx.PeerRead} (one peer's reads
 * on the pipelined wire), {@code dev.mx.VersionWait}, {@code dev.mx.Lease} and {@code
 * dev.mx.VerificationFailure}. They are on by default and cost a flag check when no recording runs;
 * {@code -XX:StartFlightRecording} records them with no code. There is no event per descriptor: a
 * refit issues thousands.
 */
package dev.mx.refit.jfr;
