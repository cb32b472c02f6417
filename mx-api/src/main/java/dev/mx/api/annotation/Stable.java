package dev.mx.api.annotation;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * An API integrators may rely on: it changes only compatibly between releases of the same major
 * version, which the binary-compatibility check (japicmp, the root pom's {@code api-compat}
 * profile) enforces. Every public type of mx's published modules carries one of {@code @Stable},
 * {@link Experimental} or {@link Internal}.
 */
@Documented
@Retention(RetentionPolicy.CLASS)
@Target({ElementType.TYPE, ElementType.PACKAGE})
public @interface Stable {}
