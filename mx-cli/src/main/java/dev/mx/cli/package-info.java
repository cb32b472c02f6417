/**
 * The {@code mx} command line: one picocli subcommand per job; results on stdout, logs on stderr.
 */
package dev.mx.cli;
