package dev.mx.api.annotation;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Public only so that mx's own modules can share it: not for integrators, no compatibility promise,
 * excluded from the binary-compatibility check of mx-api.
 */
@Documented
@Retention(RetentionPolicy.CLASS)
@Target({
  ElementType.TYPE,
  ElementType.METHOD,
  ElementType.CONSTRUCTOR,
  ElementType.FIELD,
  ElementType.PACKAGE
})
public @interface Internal {}
