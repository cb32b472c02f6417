package dev.mx.api.annotation;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * An API that may change incompatibly, or go away, in a minor release: integrators may use and
 * implement it but should expect to follow changes. The binary-compatibility check of mx-api
 * excludes it.
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
public @interface Experimental {
  /** Why it is experimental, or the issue that will settle it. */
  String value() default "";
}
