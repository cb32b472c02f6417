/**
 * API stability markers: {@link dev.mx.api.annotation.Experimental} (may change in a minor release)
 * and {@link dev.mx.api.annotation.Internal} (for mx's own modules). Everything public and unmarked
 * in mx-api is stable and checked for binary compatibility once a release exists.
 */
package dev.mx.api.annotation;
